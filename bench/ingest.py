"""Audit benchmark: record ingest through the real HTTP endpoint vs raw psycopg COPY.

    .venv/bin/python bench/ingest.py [--records 200000] [--batch 500] [--clients 4] [--servers 2]

Record wires come from the real SDK (one session of `--batch` records, replicated with a
fresh session id per batch). They are POSTed as `--batch`-item batches by `--clients`
concurrent httpx tasks to `--servers` daphne processes on loopback (DEBUG=0, PostgreSQL
bench database, Redis DB 6). Baseline in the same run: the same rows (already derived,
so no Python work is timed) written with psycopg `COPY` into a scratch table with the
same indexes (LIKE … INCLUDING ALL), and into one with no indexes, in rounds that
alternate with the HTTP rounds so all three see the same machine load. Then the pending
records are sealed in-process to show the chain keeps up. Targets (issue 14): HTTP ≥ 0.5×
COPY into the indexed table, ≥ 25,000 records/s with the defaults, ≥ 15,000 records/s
with `--clients 1 --servers 1`; sealing ≥ 2× the HTTP rate.

    .venv/bin/python bench/ingest.py --sustained 600 --rate 25000

Sustained mode instead: POSTs at `--rate` records/s (paced batches, fresh sessions) for
`--sustained` seconds while a real Celery worker (solo pool, the bench's Redis DB) seals,
scheduled as production schedules it (on commit of each ingest). Every 10 s it prints the
rate reached and the seal lag (records stored but not sealed); at the end the lag, and
how long the worker took to drain it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from audit_common import (  # noqa: E402
    BENCH_REDIS_URL,
    ROOT,
    bench_agent,
    free_ports,
    psycopg_conninfo,
    server_env,
    setup_django,
    start_daphne,
    stop,
)


def make_bodies(records: int, batch: int) -> list[bytes]:
    from tests.audit.record_wires import sdk_session

    calls = ["Bash", "ReadFile", "rm", "GrepSearch", "deploy", "audit"]
    wires = sdk_session([calls[i % len(calls)] for i in range(batch - 4)])
    session = wires[0]["session_id"]
    template = json.dumps(
        [{"record": w, "meta": {"framework": "agent_framework", "revision": 3}} for w in wires]
    )
    return [template.replace(session, str(uuid.uuid4())).encode() for _ in range(records // batch)]


async def post_all(bodies: list[bytes], token: str, ports: list[int], clients: int) -> float:
    import httpx

    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    async def worker(index: int) -> None:
        url = f"http://127.0.0.1:{ports[index % len(ports)]}/api/v1/records"
        async with httpx.AsyncClient(timeout=60) as client:
            while not queue.empty():
                body = queue.get_nowait()
                response = await client.post(url, content=body, headers=headers)
                if response.status_code != 202:
                    raise SystemExit(f"HTTP {response.status_code}: {response.text[:300]}")

    began = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(clients)))
    return time.perf_counter() - began


def copy_rows(
    bodies: list[bytes], agent_id: int
) -> tuple[list[tuple[object, ...]], list[list[object]]]:
    """The bodies' records as the text baseline COPYs them (`_pg_values`) and as ingest's
    binary COPY sends them (`audit.record_copy.write_rows`), derived once."""
    import datetime as dt

    from audit.ingest import batch_items
    from audit.services import _pg_values

    now = dt.datetime.now(dt.UTC)
    rows = [item.row() for body in bodies for item in batch_items(json.loads(body))]
    text = [(agent_id, now, *_pg_values(row, now)) for row in rows]
    # SDK records carry a timestamp, so no row needs `now` in its place.
    return text, [[agent_id, now, *row.values()] for row in rows]


def scratch_tables() -> None:
    import psycopg

    with psycopg.connect(psycopg_conninfo()) as conn:
        for name, like in (
            ("bench_scratch_indexed", "INCLUDING ALL"),
            ("bench_scratch_binary", "INCLUDING ALL"),
            ("bench_scratch_bare", "INCLUDING DEFAULTS INCLUDING IDENTITY"),
        ):
            conn.execute(f"DROP TABLE IF EXISTS {name}")
            conn.execute(f"CREATE TABLE {name} (LIKE audit_interceptionrecord {like})")


def timed_copy(rows: Sequence[Sequence[object]], table: str, *, binary: bool = False) -> float:
    """COPY `rows` in units of 500 (one HTTP batch each), one commit per unit: text COPY
    by psycopg's `write_row` (the issue's baseline), or `binary` with the types fixed as
    ingest sends them."""
    import orjson
    import psycopg
    from psycopg.types.json import set_json_dumps

    from audit.record_copy import COPY_TYPES
    from audit.record_fields import INGEST_COLUMNS

    columns = ", ".join(("agent_id", "received_at", *INGEST_COLUMNS))
    sql = f"COPY {table} ({columns}) FROM STDIN" + (" (FORMAT BINARY)" if binary else "")
    with psycopg.connect(psycopg_conninfo()) as conn:
        set_json_dumps(orjson.dumps, context=conn)
        began = time.perf_counter()
        with conn.cursor() as cursor:
            for start in range(0, len(rows), 500):
                with cursor.copy(sql) as copy:
                    if binary:
                        copy.set_types(COPY_TYPES[1:])
                    for row in rows[start : start + 500]:
                        copy.write_row(row)
                conn.commit()
        return time.perf_counter() - began


def _unsealed() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(jsonb_array_length(record_ids)), 0) FROM audit_recordsealpending"
        )
        return int(cursor.fetchone()[0])


def start_worker() -> subprocess.Popen[bytes]:
    """A Celery worker on the bench's Redis DB, answering pings (i.e. ready) when returned."""
    from console.celery import app

    celery = str(Path(sys.executable).parent / "celery")
    proc = subprocess.Popen(
        [celery, "-A", "console", "worker", "--pool", "solo", "--loglevel", "WARNING"],
        cwd=ROOT,
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while not app.control.ping(timeout=1.0):
        if time.monotonic() > deadline:
            stop([proc])
            raise SystemExit("the Celery worker did not come up")
    return proc


async def post_paced(
    template: str, session: str, token: str, ports: list[int], clients: int, rate: float,
    seconds: float, sent: list[int], batch: int,
) -> None:  # fmt: skip
    """POST batches at `rate` records/s (a shared schedule the clients take slots from)."""
    import httpx

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    interval = batch / rate
    began = time.perf_counter()
    slot = [0]

    async def worker(index: int) -> None:
        url = f"http://127.0.0.1:{ports[index % len(ports)]}/api/v1/records"
        async with httpx.AsyncClient(timeout=60) as client:
            while True:
                due = began + slot[0] * interval
                if due - began >= seconds:
                    return
                slot[0] += 1
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                body = template.replace(session, str(uuid.uuid4())).encode()
                response = await client.post(url, content=body, headers=headers)
                if response.status_code != 202:
                    raise SystemExit(f"HTTP {response.status_code}: {response.text[:300]}")
                sent[0] += batch

    await asyncio.gather(*(worker(i) for i in range(clients)))


def sustained(args: argparse.Namespace) -> None:
    """Ingest at a target rate with sealing running as in production; print the seal lag."""
    import threading

    import redis
    from django.db import connection

    from tests.audit.record_wires import sdk_session

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE audit_recordseal, audit_recordsealpending, audit_chainhead, "
            "audit_interceptionrecord"
        )
    redis.Redis.from_url(BENCH_REDIS_URL).delete("celery")  # seal tasks of earlier runs
    agent, token = bench_agent("bench-ingest")
    calls = ["Bash", "ReadFile", "rm", "GrepSearch", "deploy", "audit"]
    wires = sdk_session([calls[i % len(calls)] for i in range(args.batch - 4)])
    session = wires[0]["session_id"]
    template = json.dumps(
        [{"record": w, "meta": {"framework": "agent_framework", "revision": 3}} for w in wires]
    )
    ports = free_ports(args.servers)
    procs = start_daphne(ports)
    worker = start_worker()
    sent = [0]
    load = os.getloadavg()
    print(f"sustained: {args.rate:,} records/s for {args.sustained}s, batches of {args.batch}, "
          f"{args.clients} clients, {args.servers} daphne processes, 1 Celery worker (solo); "
          f"load average {load[0]:.1f}")  # fmt: skip
    done = threading.Event()

    def report() -> None:
        began = time.perf_counter()
        while not done.wait(10):
            elapsed = time.perf_counter() - began
            print(f"  {elapsed:5.0f}s  ingested {sent[0]:>9,} ({sent[0] / elapsed:>7,.0f}/s)  "
                  f"seal lag {_unsealed():>8,} records  load {os.getloadavg()[0]:.1f}",
                  flush=True)  # fmt: skip
        connection.close()

    reporter = threading.Thread(target=report, daemon=True)
    began = time.perf_counter()
    reporter.start()
    try:
        asyncio.run(
            post_paced(
                template,
                session,
                token,
                ports,
                args.clients,
                args.rate,
                args.sustained,
                sent,
                args.batch,
            )  # fmt: skip
        )
        elapsed = time.perf_counter() - began
        done.set()
        lag = _unsealed()
        drained = time.perf_counter()
        while _unsealed() and time.perf_counter() - drained < 600:
            time.sleep(0.5)
        drain = time.perf_counter() - drained
    finally:
        done.set()
        stop([*procs, worker])
    print(f"ingested {sent[0]:,} records in {elapsed:.0f}s = {sent[0] / elapsed:,.0f} records/s "
          f"(target {args.rate:,})")  # fmt: skip
    print(f"seal lag at the end: {lag:,} records; drained in {drain:.1f}s "
          f"({'kept up' if lag <= 2 * args.batch * args.clients else 'fell behind'})")  # fmt: skip


def main() -> None:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sustained", type=int, default=0, help="seconds of paced ingest")
    parser.add_argument("--rate", type=int, default=25_000, help="records/s when sustained")
    args = parser.parse_args()
    setup_django()
    if args.sustained:
        sustained(args)
        return
    from django.db import connection

    from audit.chain import chain_seal
    from audit.models import InterceptionRecord

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE audit_recordseal, audit_recordsealpending, audit_chainhead, "
            "audit_interceptionrecord"
        )
    agent, token = bench_agent("bench-ingest")
    bodies = make_bodies(args.records, args.batch)
    total = len(bodies) * args.batch
    rows, typed_rows = copy_rows(bodies, agent.pk)
    scratch_tables()
    ports = free_ports(args.servers)
    procs = start_daphne(ports)
    # Rounds alternate the HTTP path and the COPY baselines, so both see the same
    # machine load (this machine is shared) and tables of the same size.
    http_seconds = copy_indexed = copy_binary = copy_bare = 0.0
    per_round = -(-len(bodies) // args.rounds)
    try:
        asyncio.run(post_all(bodies[:4], token, ports, 2))  # warm-up
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE audit_recordsealpending, audit_interceptionrecord CASCADE")
        for start in range(0, len(bodies), per_round):
            chunk = bodies[start : start + per_round]
            http_seconds += asyncio.run(post_all(chunk, token, ports, args.clients))
            lo, hi = start * args.batch, (start + len(chunk)) * args.batch
            copy_indexed += timed_copy(rows[lo:hi], "bench_scratch_indexed")
            copy_bare += timed_copy(rows[lo:hi], "bench_scratch_bare")
            copy_binary += timed_copy(typed_rows[lo:hi], "bench_scratch_binary", binary=True)
    finally:
        stop(procs)
        with connection.cursor() as cursor:
            cursor.execute(
                "DROP TABLE IF EXISTS bench_scratch_indexed, bench_scratch_binary, "
                "bench_scratch_bare"
            )
    stored = InterceptionRecord.objects.filter(agent=agent).count()
    assert stored == total, f"stored {stored} of {total}"
    began = time.perf_counter()
    sealed = chain_seal(agent.pk)
    seal_seconds = time.perf_counter() - began

    http_rate, indexed_rate = total / http_seconds, total / copy_indexed
    print(f"records: {total} in batches of {args.batch}, {args.clients} clients, "
          f"{args.servers} daphne processes, {args.rounds} alternating rounds")  # fmt: skip
    print(f"HTTP ingest           {http_rate:>10,.0f} records/s  ({http_seconds:.2f}s)")
    print(f"COPY, same indexes    {indexed_rate:>10,.0f} rows/s     ({copy_indexed:.2f}s)")
    print(f"COPY binary, same idx {total / copy_binary:>10,.0f} rows/s     ({copy_binary:.2f}s)")
    print(f"COPY, no indexes      {total / copy_bare:>10,.0f} rows/s     ({copy_bare:.2f}s)")
    print(f"ratio HTTP / COPY(same indexes) = {http_rate / indexed_rate:.2f}  (target >= 0.5)")
    print(f"ratio HTTP / COPY binary(same indexes) = {http_rate / (total / copy_binary):.2f}")
    print(f"ratio HTTP / COPY(no indexes)   = {http_rate / (total / copy_bare):.2f}")
    target = 25_000 if (args.clients, args.servers) == (4, 2) else 15_000
    print(f"target >= {target:,} records/s: {'met' if http_rate >= target else 'NOT met'}")
    seal_rate = sealed / seal_seconds
    print(f"sealing (in-process)  {seal_rate:>10,.0f} records/s  ({sealed} sealed)")
    print(f"ratio sealing / HTTP ingest = {seal_rate / http_rate:.2f}  (target >= 2)")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
