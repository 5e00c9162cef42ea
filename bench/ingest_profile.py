"""Where the time of one ingested record goes, piece by piece, measured in one process.

    .venv/bin/python bench/ingest_profile.py [--records 20000] [--repeat 3]

Python steps are timed with `time.process_time` (CPU of this process only, so other work
on a shared machine inflates them little): the body's JSON parse, validation, the derived
columns, and building the COPY rows. The database steps are timed by the wall clock (the
server's CPU is not ours), COPYing the same rows, 500 per transaction, into scratch tables
that differ by one index (or the agent foreign key) at a time, best of `--repeat`; an
index's cost is its table's time less the bare table's. Bench database as bench/ingest.py
(BENCH_DATABASE_URL).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_common import bench_agent, psycopg_conninfo, setup_django  # noqa: E402
from ingest import make_bodies  # noqa: E402

# (name, DDL after the bare table exists; {t} is the table)
VARIANTS: list[tuple[str, list[str]]] = [
    ("bare (no index)", []),
    ("+ primary key (id, timestamp)", ["ALTER TABLE {t} ADD PRIMARY KEY (id, timestamp)"]),
    (
        "+ unique (session_id, sequence, agent_id, timestamp)",
        ["CREATE UNIQUE INDEX ON {t} (session_id, sequence, agent_id, timestamp)"],
    ),
    ("+ (timestamp, id)", ["CREATE INDEX ON {t} (timestamp, id)"]),
    ("+ (agent_id, timestamp, id)", ["CREATE INDEX ON {t} (agent_id, timestamp, id)"]),
    ("+ (outcome, timestamp, id)", ["CREATE INDEX ON {t} (outcome, timestamp, id)"]),
    ("+ GIN hook_ids", ["CREATE INDEX ON {t} USING gin (hook_ids)"]),
    (
        "+ (lower(tool_name) text_pattern_ops, timestamp)",
        ["CREATE INDEX ON {t} (lower(tool_name) text_pattern_ops, timestamp)"],
    ),
    # What the table no longer has, for the record of what each cost.
    ("+ BRIN timestamp (dropped, migration 0013)", ["CREATE INDEX ON {t} USING brin (timestamp)"]),
    (
        "+ FK agent_id -> agents_agent (dropped, 0015)",
        [
            "ALTER TABLE {t} ADD FOREIGN KEY (agent_id) REFERENCES agents_agent (id) "
            "DEFERRABLE INITIALLY DEFERRED"
        ],
    ),
    ("as audit_interceptionrecord (LIKE … INCLUDING ALL)", []),
]


def backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) a PostgreSQL server process has used (same machine)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_record(label: str, n: int, fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.process_time()
        fn()
        best = min(best, time.process_time() - began)
    micros = best / n * 1e6
    print(f"  {label:<52} {micros:7.1f} µs/record")
    return micros


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    import datetime as dt

    import orjson
    import psycopg

    from audit import ingest, record_rows, services
    from audit.record_fields import INGEST_COLUMNS

    agent, _token = bench_agent("bench-ingest")
    bodies = make_bodies(args.records, 500)
    n = len(bodies) * 500
    now = dt.datetime.now(dt.UTC)
    parsed = [orjson.loads(body) for body in bodies]
    items = [item for batch in parsed for item in batch]
    print(f"{n} records, {sum(map(len, bodies)) / n:.0f} bytes of JSON each (Python CPU time)")
    r = args.repeat
    cpu_per_record(
        "orjson.loads (the API's parser)", n, lambda: [orjson.loads(b) for b in bodies], r
    )
    cpu_per_record(
        "jsonschema-rs is_valid",
        n,
        lambda: [ingest.record_fast_validator().is_valid(i["record"]) for i in items],
        r,
    )
    cpu_per_record(
        "validation of the items (batch checks, schema, timestamp)",
        n,
        lambda: [ingest._item_errors(k, i, False) for k, i in enumerate(items)],
        r,
    )
    cpu_per_record(
        "derived columns (row_from_item)",
        n,
        lambda: [record_rows.row_from_item(i["record"], i.get("meta")) for i in items],
        r,
    )
    cpu_per_record(
        "batch_items (validation, as the view calls it)",
        n,
        lambda: [ingest.batch_items(batch, check_strings=False) for batch in parsed],
        r,
    )
    rows = [
        item.row() for batch in parsed for item in ingest.batch_items(batch, check_strings=False)
    ]
    cpu_per_record(
        "COPY values (_pg_values)", n, lambda: [services._pg_values(row, now) for row in rows], r
    )
    values = [(0, agent.pk, now, *services._pg_values(row, now)) for row in rows]
    for k, row in enumerate(values):
        values[k] = (k + 1, *row[1:])
    columns = ", ".join(("id", "agent_id", "received_at", *INGEST_COLUMNS))

    def copy_to(table: str) -> tuple[float, float]:
        """(wall seconds, CPU seconds of the server process) of COPYing every row."""
        with psycopg.connect(psycopg_conninfo()) as conn:
            conn.execute(f"TRUNCATE {table}")
            conn.commit()
            backend = conn.info.backend_pid
            cpu = backend_cpu(backend)
            began = time.perf_counter()
            with conn.cursor() as cursor:
                for start in range(0, len(values), 500):
                    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in values[start : start + 500]:
                            copy.write_row(row)
                    conn.commit()
            return time.perf_counter() - began, backend_cpu(backend) - cpu

    tables = []
    with psycopg.connect(psycopg_conninfo(), autocommit=True) as conn:
        for k, (_label, ddl) in enumerate(VARIANTS):
            table = f"bench_profile_{k}"
            like = "INCLUDING ALL" if k == len(VARIANTS) - 1 else "INCLUDING DEFAULTS"
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE UNLOGGED TABLE {table} (LIKE audit_interceptionrecord {like})")
            conn.execute(f"ALTER TABLE {table} SET LOGGED")
            for statement in ddl:
                conn.execute(statement.format(t=table))
            tables.append(table)
    best = [float("inf")] * len(tables)
    best_cpu = [float("inf")] * len(tables)
    try:
        for _ in range(r):  # rounds alternate the tables: all see the same machine load
            for k, table in enumerate(tables):
                wall, cpu = copy_to(table)
                best[k], best_cpu[k] = min(best[k], wall), min(best_cpu[k], cpu)
    finally:
        with psycopg.connect(psycopg_conninfo(), autocommit=True) as conn:
            for table in tables:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
    print("COPY of the same rows, 500 per transaction, best of rounds: wall clock, and the")
    print("CPU time of the PostgreSQL server process (+ = more than the bare table)")
    for k, (label, _ddl) in enumerate(VARIANTS):
        wall, cpu = best[k] / n * 1e6, best_cpu[k] / n * 1e6
        extra = "" if k == 0 else f"(+{cpu - best_cpu[0] / n * 1e6:5.1f})"
        print(f"  {label:<52} {wall:7.1f} µs wall  {cpu:6.1f} µs CPU {extra}")


if __name__ == "__main__":
    main()
