"""Audit benchmark: first-page latency of record search at 10M rows.

    .venv/bin/python bench/search.py [--records 10000000] [--budget 600] [--repeat 20]

Uses its own database (console_audit_search_bench). Seeds with `audit_seed_records`'
SQL (`INSERT … SELECT generate_series`, 250k rows per transaction) until --records rows
or --budget seconds, whichever comes first (the secondary indexes are dropped during
the bulk load and rebuilt after, as one would for a bulk import), then ANALYZE. Then
for each common filter it runs the search exactly as the API does
(`records_filter` + `records_page`, limit 50, newest first) --repeat times and prints
p50/p95/max; a second pass goes through HTTP (daphne, DEBUG=0) for the same filters.
Target: first page p95 ≤ 200 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_audit_search_bench"
)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_common import (  # noqa: E402
    bench_agent,
    bench_auditor,
    free_ports,
    setup_django,
    start_daphne,
    stop,
)

SECONDARY = ("record_ts_id", "record_agent_ts", "record_outcome_ts", "record_hook_ids_gin")


def seed(target: int, budget: float) -> None:
    from django.db import connection

    from audit.management.commands.audit_seed_records import seed_records
    from audit.models import InterceptionRecord

    have = InterceptionRecord.objects.count()
    if have >= target:
        print(f"bench database already holds {have:,} rows")
        return
    agents = [bench_agent(f"search-agent-{i}")[0].pk for i in range(10)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
            [list(SECONDARY)],
        )
        # A partitioned table lists its indexes as "ON ONLY <parent>": recreate them on
        # the parent and every partition.
        definitions = [(n, d.replace(" ON ONLY ", " ON ")) for n, d in cursor.fetchall()]
        for name, _definition in definitions:
            cursor.execute(f"DROP INDEX {name}")
    began = time.perf_counter()
    chunk = 250_000
    done = 0
    while have + done < target and time.perf_counter() - began < budget:
        step = min(chunk, target - have - done)
        seed_records(agent_ids=agents, count=step, days=365, chunk=step)
        done += step
        print(
            f"  seeded {have + done:,} rows ({(have + done) / (time.perf_counter() - began):,.0f}/s)",
            flush=True,
        )
    seeded = time.perf_counter() - began
    rebuild = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        for _name, definition in definitions:
            cursor.execute(definition)
        cursor.execute("ANALYZE audit_interceptionrecord")
    print(
        f"seeded {done:,} rows in {seeded:.0f}s, rebuilt indexes in "
        f"{time.perf_counter() - rebuild:.0f}s"
    )


FILTERS: list[dict[str, str]] = [
    {},
    {"agent": "search-agent-3"},
    {"outcome": "denied"},
    {"outcome": "expired"},
    {"decision": "deny"},
    {"agent": "search-agent-3", "outcome": "approved"},
    {"hook": "hk_guard0007"},
    {"tool_name": "kubectl"},
    {"mode": "evaluate_only"},
    {"interception_point": "pre_tool_call"},
    {"q": "pii"},
    {"since": "LAST_MONTH"},
    {"agent": "search-agent-5", "since": "LAST_MONTH", "outcome": "rejected"},
]


def last_month() -> str:
    import datetime as dt

    return (dt.datetime.now(dt.UTC) - dt.timedelta(days=30)).date().isoformat()


def resolve(params: dict[str, str]) -> dict[str, str]:
    return {k: (last_month() if v == "LAST_MONTH" else v) for k, v in params.items()}


def in_process(repeat: int) -> list[tuple[str, float, float, float, int]]:
    from django.contrib.auth.models import User

    from audit.selectors import records_filter, records_page

    user = User.objects.get(username="bench-auditor")
    out = []
    for params in FILTERS:
        timings = []
        for _ in range(repeat):
            began = time.perf_counter()
            page = records_page(records_filter(resolve(params), user=user), None, 50)
            timings.append((time.perf_counter() - began) * 1000)
        out.append(summary(params, timings, len(page.items)))
    return out


def summary(
    params: dict[str, str], timings: list[float], count: int
) -> tuple[str, float, float, float, int]:
    timings.sort()
    p95 = timings[max(0, int(round(0.95 * len(timings))) - 1)]
    label = " ".join(f"{k}={v}" for k, v in params.items()) or "(no filter)"
    return label, statistics.median(timings), p95, timings[-1], count


def over_http(repeat: int, token: str) -> list[tuple[str, float, float, float, int]]:
    import httpx

    [port] = free_ports(1)
    procs = start_daphne([port])
    out = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            headers = {"Authorization": f"Bearer {token}"}
            for params in FILTERS:
                timings = []
                for _ in range(repeat):
                    began = time.perf_counter()
                    response = client.get(
                        "/api/v1/records", params={**resolve(params), "limit": 50}, headers=headers
                    )
                    timings.append((time.perf_counter() - began) * 1000)
                    assert response.status_code == 200, response.text[:200]
                out.append(summary(params, timings, len(response.json()["results"])))
    finally:
        stop(procs)
    return out


def show(title: str, rows: list[tuple[str, float, float, float, int]]) -> None:
    print(title)
    print(f"  {'filter':<58} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'rows':>5}")
    for label, p50, p95, worst, count in rows:
        print(f"  {label:<58} {p50:>8.1f} {p95:>8.1f} {worst:>8.1f} {count:>5}")
    print(f"  worst p95 {max(r[2] for r in rows):.1f} ms (target <= 200 ms)")


def main() -> None:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--budget", type=float, default=600.0)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    setup_django()
    from audit.models import InterceptionRecord

    seed(args.records, args.budget)
    token = bench_auditor()
    print(f"rows: {InterceptionRecord.objects.count():,}")
    show("selectors (records_filter + records_page, limit 50):", in_process(args.repeat))
    show("HTTP GET /api/v1/records?limit=50 (daphne):", over_http(args.repeat, token))


if __name__ == "__main__":
    main()
