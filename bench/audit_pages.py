"""Audit pages benchmark: server time of the auditor's pages over a large record table.

    .venv/bin/python bench/audit_pages.py [--records 1000000] [--repeat 10]

Uses its own database (console_auditui_bench; override with BENCH_DATABASE_URL). Seeds
with `audit_seed_records`' SQL (5 agents, 30 days) up to --records rows, then VACUUM ANALYZE.
Each page is rendered --repeat times in-process (Django test client, logged-in auditor,
the whole middleware stack and template) and reported as p50/p95, beside a baseline
measured in the same run on the same rows:

- search pages: the selector alone (`records_filter` + `records_page`, limit 50);
- the explorer (/audit/ with its histogram, facets and total; the default period is the
  last 24 h), sessions and dashboard: one `SELECT count(*)` over the same time window (the
  cheapest query that reads the window at all);
- an explorer page turn (htmx, only the table): the selector alone.
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


def seed(target: int) -> None:
    from django.db import connection

    from audit.management.commands.audit_seed_records import seed_records
    from audit.models import InterceptionRecord

    have = InterceptionRecord.objects.count()
    if have >= target:
        print(f"bench database already holds {have:,} rows")
        return
    agents = [bench_agent(f"pages-agent-{i}")[0].pk for i in range(5)]
    began = time.perf_counter()
    seed_records(agent_ids=agents, count=target - have, days=30, chunk=250_000)
    with connection.cursor() as cursor:
        # As autovacuum leaves an insert-only table: visibility map set (index-only scans)
        # and BRIN ranges summarized (unsummarized ranges match every query).
        cursor.execute("VACUUM ANALYZE audit_interceptionrecord")
    print(f"seeded {target - have:,} rows in {time.perf_counter() - began:.0f}s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    setup_django()

    import datetime as dt

    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from audit.models import InterceptionRecord
    from audit.selectors import records_filter, records_page
    from console import services

    seed(args.records)
    user = services.user_set_role(actor=None, username="bench-pages", role="auditor")
    client = Client()
    client.force_login(user)
    total = InterceptionRecord.objects.count()
    now = timezone.now()

    def page(url: str, **headers: str) -> Callable[[], object]:
        def get() -> object:
            response = client.get(url, **headers)
            assert response.status_code == 200, (url, response.status_code)
            return response

        return get

    def selector(params: dict[str, str]) -> Callable[[], object]:
        return lambda: records_page(records_filter(params, user=user), None, 50)

    def window(days: int) -> Callable[[], object]:
        return window_h(24 * days)

    def window_h(hours: int) -> Callable[[], object]:
        since = now - dt.timedelta(hours=hours)

        def count() -> object:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM audit_interceptionrecord WHERE timestamp >= %s",
                    [since],
                )
                return cursor.fetchone()

        return count

    turn = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "record-list"}
    cursor = records_page(records_filter({"range": "24h"}, user=user), None, 50).next_cursor
    cases = [
        ("/audit/ (explorer, default 24 h)", page("/audit/"), window(1)),
        ("/audit/?range=1h", page("/audit/?range=1h"), window_h(1)),
        ("/audit/?range=7d", page("/audit/?range=7d"), window(7)),
        ("/audit/?range=30d", page("/audit/?range=30d"), window(30)),
        ("/audit/?outcome=denied (24 h)", page("/audit/?outcome=denied"), window(1)),
        ("/audit/?tool_prefix=exec (24 h)", page("/audit/?tool_prefix=exec"), window(1)),
        ("/audit/?hook=hk_guard0003 (24 h)", page("/audit/?hook=hk_guard0003"), window(1)),
        (
            "/audit/?range=24h&cursor=… (htmx page turn)",
            page(f"/audit/?range=24h&cursor={cursor}", **turn),
            selector({"range": "24h"}),
        ),
        ("/audit/?range=all (all time)", page("/audit/?range=all"), window(3650)),
        (
            "/audit/?agent=pages-agent-2&outcome=expired (24 h)",
            page("/audit/?agent=pages-agent-2&outcome=expired"),
            selector({"agent": "pages-agent-2", "outcome": "expired", "range": "24h"}),
        ),
        ("/audit/sessions/ (7 days)", page("/audit/sessions/"), window(7)),
        ("/audit/dashboard/ (14 days)", page("/audit/dashboard/"), window(14)),
        ("/audit/dashboard/?days=30", page("/audit/dashboard/?days=30"), window(30)),
    ]
    print(f"\n{total:,} records; p50 / p95 in ms over {args.repeat} renders\n")
    print(f"{'page':48} {'page p50':>9} {'p95':>8} {'baseline p50':>13} {'ratio':>7}")
    for label, render, baseline in cases:
        p50, p95 = timed(render, args.repeat)
        b50, _ = timed(baseline, args.repeat)
        print(f"{label:48} {p50:9.1f} {p95:8.1f} {b50:13.1f} {p50 / max(b50, 0.01):6.1f}x")


if __name__ == "__main__":
    main()
