"""Audit benchmark: 1M records exported as CSV through the endpoint vs COPY TO STDOUT.

    .venv/bin/python bench/export.py [--records 1000000]

Seeds the bench database with `audit_seed_records` (skipped when it already holds the
rows), starts one daphne process (DEBUG=0), and streams
GET /api/v1/records/export?format=csv as an auditor with httpx, counting rows, while a
thread samples the server's RSS every 50 ms. Baseline in the same run: psycopg
`COPY (SELECT …) TO STDOUT` of the very SELECT the endpoint runs (built by the same
filter code), read to the end. Targets: endpoint ≥ 0.5× COPY rows/s; server peak RSS
growth ≤ 100 MB.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qsl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_common import (  # noqa: E402
    bench_agent,
    bench_auditor,
    free_ports,
    psycopg_conninfo,
    rss_bytes,
    setup_django,
    start_daphne,
    stop,
)


def ensure_rows(count: int) -> None:
    from audit.management.commands.audit_seed_records import seed_records
    from audit.models import InterceptionRecord

    have = InterceptionRecord.objects.count()
    if have >= count:
        return
    agents = [bench_agent(f"bench-export-{i}")[0].pk for i in range(4)]
    seconds = seed_records(agent_ids=agents, count=count - have, days=30, chunk=100_000)
    print(f"seeded {count - have} rows in {seconds:.0f}s")


def copy_baseline(filters: dict[str, str]) -> tuple[int, float]:
    import psycopg
    from django.contrib.auth.models import User

    from audit import export
    from audit.selectors import records_filter

    user = User.objects.get(username="bench-auditor")
    qs = records_filter(filters, user=user)
    with psycopg.connect(psycopg_conninfo()) as conn:
        statement = export.copy_statement(qs, "csv", conn)
        began = time.perf_counter()
        lines = 0
        with conn.cursor() as cursor, cursor.copy(statement) as copy:
            for block in copy:
                lines += bytes(block).count(b"\n")
        return lines, time.perf_counter() - began


def endpoint(port: int, token: str, pid: int, query: str) -> tuple[int, float, int, int]:
    import httpx

    baseline = rss_bytes(pid)
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_bytes(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    lines = 0
    began = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    url = f"http://127.0.0.1:{port}/api/v1/records/export?format=csv" + (
        f"&{query}" if query else ""
    )
    with httpx.stream("GET", url, headers=headers, timeout=600) as response:
        assert response.status_code == 200, response.read()[:300]
        for chunk in response.iter_bytes():
            lines += chunk.count(b"\n")
    elapsed = time.perf_counter() - began
    done.set()
    sampler.join()
    return lines - 1, elapsed, baseline, peak  # minus the column header


def main() -> None:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument(
        "--filter", default="", help="Export only these records (a query string: agent=…)."
    )
    args = parser.parse_args()
    filters = dict(parse_qsl(args.filter))
    setup_django()
    from audit.models import InterceptionRecord

    ensure_rows(args.records)
    total = InterceptionRecord.objects.count()
    print(f"stored rows: {total}, filter: {args.filter or '(none)'}")
    token = bench_auditor()
    [port] = free_ports(1)
    procs = start_daphne([port])
    try:
        endpoint(port, token, procs[0].pid, args.filter)  # warm-up (also the page cache)
        rows, seconds, rss_before, rss_peak = endpoint(port, token, procs[0].pid, args.filter)
    finally:
        stop(procs)
    copy_rows, copy_seconds = copy_baseline(filters)
    assert rows == copy_rows and (filters or rows == total), (rows, total, copy_rows)
    rate, copy_rate = rows / seconds, copy_rows / copy_seconds
    growth = (rss_peak - rss_before) / 2**20
    print(f"rows: {rows}")
    print(f"endpoint CSV export    {rate:>10,.0f} rows/s  ({seconds:.2f}s)")
    print(f"COPY (SELECT) TO STDOUT {copy_rate:>9,.0f} rows/s  ({copy_seconds:.2f}s)")
    print(f"ratio endpoint / COPY = {rate / copy_rate:.2f}  (target >= 0.5)")
    print(
        f"server RSS before {rss_before / 2**20:.0f} MiB, peak {rss_peak / 2**20:.0f} MiB, "
        f"growth {growth:.1f} MiB (target <= 100 MB)"
    )


if __name__ == "__main__":
    main()
