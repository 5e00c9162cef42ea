"""Audit benchmark: record ingest into the monthly-partitioned table, near-empty vs large.

    .venv/bin/python bench/partitions.py [--records 10000000] [--budget 900] [--rounds 3]

Own database (BENCH_DATABASE_URL, default console_parts_bench). First the record tables
are emptied (TRUNCATE) and `--rounds` rounds of `--per-round` records (real SDK wires,
batches of `--batch`, a fresh session per batch) go through `audit.services.records_ingest`
in-process: validation is done before the clock starts, so the rounds time the write
path itself (COPY into the partitioned table, its indexes, the seal queue, the commit).
Then the table is seeded to `--records` rows with `audit_seed_records`' SQL (10 agents,
365 days: 13 monthly partitions; secondary indexes dropped during the load and rebuilt
after, then ANALYZE) within `--budget` seconds, and the same rounds run again. Prints
both rates and the ratio. Target: ingest at 10M stored rows within 15% of ingest into
an empty table. bench/search.py and bench/export.py then run on the same database.

`--empty-database URL` keeps the rows seeded by an earlier run and alternates its rounds
with rounds on that other database (emptied, in a child process), so both rates are taken
under the same machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_parts_bench"
)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_common import bench_agent, setup_django  # noqa: E402

SECONDARY = ("record_ts_id", "record_agent_ts", "record_outcome_ts", "record_hook_ids_gin")


def batches(records: int, batch: int) -> list[list[object]]:
    from audit.ingest import batch_items
    from tests.audit.record_wires import sdk_session

    calls = ["Bash", "ReadFile", "rm", "GrepSearch", "deploy", "audit"]
    wires = sdk_session([calls[i % len(calls)] for i in range(batch - 4)])
    session = wires[0]["session_id"]
    template = json.dumps(
        [{"record": w, "meta": {"framework": "agent_framework", "revision": 3}} for w in wires]
    )
    return [
        batch_items(json.loads(template.replace(session, str(uuid.uuid4()))))
        for _ in range(records // batch)
    ]


def ingest_round(agent: object, rows: list[list[object]]) -> float:
    from audit.services import records_ingest

    began = time.perf_counter()
    for batch in rows:
        records_ingest(actor=None, agent=agent, items=batch)  # type: ignore[arg-type]
    return sum(len(batch) for batch in rows) / (time.perf_counter() - began)


def rounds(agent: object, args: argparse.Namespace) -> list[float]:
    rates = []
    for _ in range(args.rounds):
        rows = batches(args.per_round, args.batch)  # fresh sessions each round
        rates.append(ingest_round(agent, rows))
    return rates


def alternating(agent: object, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Rounds on the emptied `--empty-database` (child processes) and on this table, in
    turn: (near-empty rates, this table's rates)."""
    import subprocess

    empty, full = [], []
    for _ in range(args.rounds):
        child = subprocess.run(
            [sys.executable, __file__, "--one-round", "--per-round", str(args.per_round),
             "--batch", str(args.batch)],
            env={**os.environ, "BENCH_DATABASE_URL": args.empty_database},
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        empty.append(float(child.stdout.rsplit("RATE ", 1)[1]))
        full.extend(rounds(agent, argparse.Namespace(**{**vars(args), "rounds": 1})))
    return empty, full


def seed(target: int, budget: float) -> None:
    from django.db import connection
    from django.utils import timezone

    from audit import partitions
    from audit.management.commands.audit_seed_records import seed_records
    from audit.models import InterceptionRecord

    have = InterceptionRecord.objects.count()
    if have >= target:
        print(f"bench database already holds {have:,} rows")
        return
    agents = [bench_agent(f"search-agent-{i}")[0].pk for i in range(10)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s) "
            "AND tablename = 'audit_interceptionrecord'",
            [list(SECONDARY)],
        )
        definitions = [(name, d.replace(" ON ONLY ", " ON ")) for name, d in cursor.fetchall()]
        for name, _definition in definitions:
            cursor.execute(f"DROP INDEX {name}")
        # The seed spans the last 365 days: give each of those months its partition, as
        # migration 0008 does for existing rows (otherwise they would land in DEFAULT).
        existing = {p.name for p in partitions.monthly_partitions(cursor)}
        now = partitions.month_floor(timezone.now())
        for offset in range(-13, 0):
            month = partitions.add_months(now, offset)
            if partitions.partition_for(month).name not in existing:
                partitions.create_partition(cursor, month)
    began = time.perf_counter()
    done = 0
    while have + done < target and time.perf_counter() - began < budget:
        step = min(250_000, target - have - done)
        seed_records(agent_ids=agents, count=step, days=365, chunk=step)
        done += step
        rate = done / (time.perf_counter() - began)
        print(f"  seeded {have + done:,} rows ({rate:,.0f}/s)", flush=True)
    seeded = time.perf_counter() - began
    rebuild = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        for _name, definition in definitions:
            cursor.execute(definition)
        cursor.execute("ANALYZE audit_interceptionrecord")
    print(
        f"seeded {done:,} rows in {seeded:.0f}s, rebuilt indexes in {time.perf_counter() - rebuild:.0f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--budget", type=float, default=900.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-round", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="Do not empty the table first.")
    parser.add_argument(
        "--empty-database",
        default="",
        help="Keep this database's rows (seeded earlier) and take the near-empty rate from "
        "rounds on that other, emptied database, run in a child process between this "
        "table's rounds, so both see the same machine load.",
    )
    parser.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.empty_database:
        args.keep = True
    setup_django()
    from django.db import connection
    from django.utils import timezone

    from audit import partitions

    assert partitions.is_partitioned(), "the bench database's record table is not partitioned"
    partitions.partitions_ensure()
    agent, _token = bench_agent("partition-bench")
    if not args.keep:
        with connection.cursor() as cursor:
            cursor.execute(
                "TRUNCATE audit_interceptionrecord, audit_recordseal, audit_recordsealpending"
            )
    if args.one_round:
        print(f"RATE {ingest_round(agent, batches(args.per_round, args.batch))}")
        return
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.empty_database:
        seed(args.records, args.budget)
        empty, full = alternating(agent, args)
    else:
        empty = rounds(agent, args)
    print("near-empty table: " + ", ".join(f"{rate:,.0f}" for rate in empty) + " records/s")
    if not args.empty_database:
        seed(args.records, args.budget)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_interceptionrecord")
        stored = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'audit_interceptionrecord'::regclass"
        )
        parts = cursor.fetchone()[0]
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if not args.empty_database:
        full = rounds(agent, args)
    print(
        f"at {stored:,} rows ({parts} partitions): "
        + ", ".join(f"{r:,.0f}" for r in full)
        + " records/s"
    )
    base, large = statistics.median(empty), statistics.median(full)
    print(f"median near-empty {base:,.0f} records/s, at {stored:,} rows {large:,.0f} records/s")
    print(f"ratio large / empty = {large / base:.2f}  (target >= 0.85)")
    print(f"load average {os.getloadavg()[0]:.1f}")
    # The rounds' records are the newest of the table and all of one agent: left there,
    # bench/search.py's newest-first walks for other agents would have to skip them all.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_interceptionrecord WHERE agent_id = %s", [agent.pk])
        # And their places in the seal queue (no sealer runs here): left there, the
        # dashboard would look them up as records still waiting for their seal.
        cursor.execute("DELETE FROM audit_recordsealpending WHERE agent_id = %s", [agent.pk])
        cursor.execute("ANALYZE audit_interceptionrecord")
        # Their dead tuples too (the current month's partition): until autovacuum gets
        # there, a time-range read of today (the explorer's histogram) visits every one.
        current = partitions.partition_for(timezone.now()).name
        cursor.execute(f"VACUUM (ANALYZE) {current}")


if __name__ == "__main__":
    main()
