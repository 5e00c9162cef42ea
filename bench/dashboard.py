"""Dashboard benchmark: server time of /audit/dashboard/ per range at two table sizes.

    .venv/bin/python bench/dashboard.py [--sizes 1000000,3000000] [--repeat 20]

Uses the database of bench/audit_pages.py (console_auditui_bench, same agents; override
with BENCH_DATABASE_URL), so either can reuse the rows the other seeded. For
each size it grows the record table with `audit_seed_records`' SQL (5 agents, records
spread over the last 30 days; seeded rows skip ingest and sealing), recounts the rollups
(`rollups_rebuild`, timed: what `manage.py audit_rollup_rebuild` does), ANALYZEs, then
renders the dashboard for each range (1h, 24h, 7d, 30d; all agents, and one agent)
--repeat times in-process (Django test client, logged-in auditor, whole middleware stack
and template) and prints p50/p95 beside two baselines measured in the same run:

- `SELECT 1`: one database round trip through Django's connection;
- `/audit/?limit=50`: the record search page's first page (its own keyset query).

The dashboard reads only the rollups, so its time should not grow with the table.
`--agents search-agent` with BENCH_DATABASE_URL pointing at bench/partitions.py's
database measures the dashboard over that seeded table (10M rows over 365 days).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_auditui_bench"
)
os.environ.setdefault("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_common import bench_agent, setup_django, timed  # noqa: E402


def grow(target: int, prefix: str, rebuild: bool = True) -> None:
    from django.db import connection

    from audit.management.commands.audit_seed_records import seed_records
    from audit.models import InterceptionRecord
    from audit.rollups import rollups_rebuild

    have = InterceptionRecord.objects.count()
    agents = [bench_agent(f"{prefix}-{i}")[0].pk for i in range(5)]
    if have < target:
        began = time.perf_counter()
        seed_records(agent_ids=agents, count=target - have, days=30, chunk=250_000)
        print(f"seeded {target - have:,} rows in {time.perf_counter() - began:.0f}s")
    if rebuild or have < target:
        began = time.perf_counter()
        counted = rollups_rebuild()
        print(f"rollups_rebuild: {counted:,} records counted in {time.perf_counter() - began:.1f}s")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audit_interceptionrecord")
        cursor.execute("ANALYZE audit_recordrollup")
        cursor.execute("ANALYZE audit_recordproblemrollup")
        cursor.execute(
            "SELECT (SELECT count(*) FROM audit_recordrollup), "
            "(SELECT count(*) FROM audit_recordproblemrollup)"
        )
        base, problems = cursor.fetchone() or (0, 0)
    print(f"rollup rows: {base:,} (counts), {problems:,} (problem details)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000000,3000000")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--agents",
        default="pages-agent",
        help="Agent slug prefix: `search-agent` reuses bench/partitions.py's rows "
        "(10 agents over 365 days) on its database.",
    )
    parser.add_argument(
        "--keep-rollups",
        action="store_true",
        help="Skip the rollup rebuild when no rows were added (an earlier run rebuilt them).",
    )
    args = parser.parse_args()
    setup_django()

    from django.db import connection
    from django.test import Client

    from audit.models import InterceptionRecord
    from console import services

    user = services.user_set_role(actor=None, username="bench-dashboard", role="auditor")
    client = Client()
    client.force_login(user)

    def page(url: str) -> Callable[[], object]:
        def get() -> object:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return response

        return get

    def select_one() -> object:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone()

    for size in [int(s) for s in args.sizes.split(",")]:
        grow(size, args.agents, rebuild=not args.keep_rollups)
        total = InterceptionRecord.objects.count()
        load = os.getloadavg()
        print(
            f"\n{total:,} records; p50 / p95 in ms over {args.repeat} renders; "
            f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}\n"
        )
        one50, _ = timed(select_one, args.repeat)
        search50, search95 = timed(page("/audit/?limit=50"), args.repeat)
        print(f"{'baseline SELECT 1':44} {one50:9.2f}")
        print(f"{'baseline /audit/?limit=50 (search page)':44} {search50:9.1f} {search95:8.1f}")
        print(f"{'page':44} {'p50':>9} {'p95':>8} {'÷ SELECT 1':>11} {'÷ search':>9}")
        for query in ("", f"&agent={args.agents}-2"):
            for key in ("1h", "24h", "7d", "30d"):
                url = f"/audit/dashboard/?range={key}{query}"
                p50, p95 = timed(page(url), args.repeat)
                print(
                    f"{url:44} {p50:9.1f} {p95:8.1f} {p50 / max(one50, 0.001):10.0f}x "
                    f"{p50 / max(search50, 0.001):8.2f}x"
                )


if __name__ == "__main__":
    main()
