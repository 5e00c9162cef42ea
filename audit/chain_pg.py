"""The PostgreSQL sealer of audit.chain: one read of the sealed columns by id, the
canonical JSON built and the rollups folded from those rows, the seals streamed into one
COPY; a backlog read ahead on other connections (`_ReadAhead`). Called by
`audit.chain.chain_seal` in its transaction, holding the agent's ChainHead lock."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import datetime as dt
import gc
import itertools
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import psycopg
from django.db import connection, transaction
from django.utils import timezone
from psycopg.adapt import Loader
from psycopg.pq import Format

from audit import rollups
from audit.chain_hash import SEALED_FIELDS, canonical_json, chain_links
from audit.models import InterceptionPoint

# The PostgreSQL sealer reads the sealed columns itself, in the forms `chain_verify` (the
# ORM, the reference) turns them into: timestamps already as `_plain` text (to_char gives
# the same digits, the year zero-padded: see _pg_plain_time) and raw as the jsonb's text,
# as bytes (_JsonbBytes), for orjson.
_PG_TIME = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
_PG_SEAL_COLUMNS = ", ".join(
    _PG_TIME.format(f'"{name}"') if name in ("timestamp", "received_at") else f'"{name}"'
    for name in SEALED_FIELDS
)
_PG_SEAL_READ_SQL = (
    f"SELECT {_PG_SEAL_COLUMNS} FROM audit_interceptionrecord "  # noqa: S608 - fixed names
    "WHERE id = ANY(%s::bigint[])"
)
_PG_SEAL_COPY_SQL = (
    "COPY audit_recordseal (record_id, chain_seq, chain_prev, chain_hash, agent_id, sealed_at) "
    "FROM STDIN"
)
_RAW = SEALED_FIELDS.index("raw")
_TIMESTAMP = SEALED_FIELDS.index("timestamp")
_TIMES = (_TIMESTAMP, SEALED_FIELDS.index("received_at"))
_AGENT, _OUTCOME, _MODE, _POINT, _HOOK, _REASON = map(
    SEALED_FIELDS.index,
    ("agent_id", "outcome", "mode", "interception_point", "decided_hook", "reason"),
)
# A sealing transaction on PostgreSQL, outside any caller's transaction, takes up to
# READ_AHEAD_BATCHES_PER_TRANSACTION pending batches; when they hold at least
# READ_AHEAD_MIN records, the records are read READ_AHEAD_CHUNK at a time by
# READ_AHEAD_READERS threads, each on a connection of its own, up to READ_AHEAD_DEPTH
# chunks ahead of the hashing (`_ReadAhead`).
READ_AHEAD_BATCHES_PER_TRANSACTION = 100
READ_AHEAD_CHUNK = 2000
READ_AHEAD_MIN = 2 * READ_AHEAD_CHUNK
READ_AHEAD_READERS = 2
READ_AHEAD_DEPTH = 3


class _JsonbBytes(Loader):
    """jsonb in binary format, handed over as its text (after the format's version byte),
    as bytes: no decoding."""

    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        return bytes(data[1:])


def _pg_plain_time(text: str) -> str:
    # strftime("%Y") writes years before 1000 unpadded (glibc): "999-…", not "0999-…".
    return text if text[0] != "0" else f"{int(text[:4])}{text[4:]}"


# orjson reads an integer past 64 bits as a float where json.loads (the ORM's reader) keeps
# an int, so a raw text with a number of 19 digits or more goes through json.loads. Runs of
# 19 digits are found by mapping every digit to 0 and looking for 19 zeros: several times
# cheaper than a regular expression.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19
_NUMBER_STARTS = frozenset(b" [-\n")


def _long_number_ids(rows: list[tuple[Any, ...]]) -> set[int]:
    """The ids of the rows whose raw text may hold such a number. One search of the texts
    joined by newlines (jsonb's text has none: it escapes them), about half the time of a
    search of each; a run of 19 digits counts where a number can start in jsonb's text:
    after a space (": ", ", "), "[" or "-". The runs in hexadecimal digests ("sha256:…",
    in most records) follow a letter, a digit or a colon; a run in a string after a space
    only costs its row json.loads's time."""
    digits = b"\n".join(row[_RAW] for row in rows).translate(_DIGITS_TO_ZERO)
    found: set[int] = set()
    start = digits.find(_LONG_DIGITS)
    while start >= 0:
        if start == 0 or digits[start - 1] in _NUMBER_STARTS:
            found.add(rows[digits.count(b"\n", 0, start)][0])
        start = digits.find(_LONG_DIGITS, start + len(_LONG_DIGITS))
    return found


def _pg_id_array(ids: list[int]) -> str:
    """`ids` as a PostgreSQL array literal, sent as one text parameter (cast by the query to
    bigint[]): about 15 ms less per 10,000 ids than psycopg adapting a list of ints."""
    return "{" + ",".join(map(str, ids)) + "}"


def _pg_seal_rows(cursor: Any, ids: list[int]) -> list[tuple[Any, ...]]:
    """The sealed columns of the records `ids` (in the `_PG_SEAL_READ_SQL` forms)."""
    cursor.adapters.register_loader("jsonb", _JsonbBytes)
    cursor.execute(_PG_SEAL_READ_SQL, [_pg_id_array(ids)], binary=True)
    rows: list[tuple[Any, ...]] = cursor.fetchall()
    return rows


class _MinuteCounts:
    """The dashboard rollups of the records being sealed, folded by minute while they are
    read for their seals: what `rollups.aggregate` folds, keyed by the minute's text."""

    def __init__(self) -> None:
        self.minutes: dict[tuple[str, int, str, str], list[int]] = {}
        self.problems: dict[tuple[str, int, str, str, str, str], int] = {}

    def add(self, values: list[Any], raw: Any) -> None:
        minute = values[_TIMESTAMP][:16]  # to_char's "YYYY-MM-DDTHH:MI" (UTC)
        key = (minute, values[_AGENT], values[_OUTCOME], values[_MODE])
        counts = self.minutes.get(key)
        if counts is None:
            counts = self.minutes[key] = [0, 0]
        counts[0] += 1
        if values[_POINT] == InterceptionPoint.AGENT_STARTUP:
            counts[1] += 1
        if values[_OUTCOME] in rollups.PROBLEM_OUTCOMES:
            message = rollups.verdict_message({"raw": raw if isinstance(raw, dict) else {}})
            problem = (*key[:3], values[_HOOK] or "", values[_REASON] or "", message)
            self.problems[problem] = self.problems.get(problem, 0) + 1

    def counted(self) -> None:
        """Add them to the rollups (in the sealing transaction)."""
        at: dict[str, dt.datetime] = {}

        def minute(text: str) -> dt.datetime:
            found = at.get(text)
            if found is None:
                found = at[text] = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
            return found

        rollups.minutes_counted(
            {(minute(m), a, o, mode): n for (m, a, o, mode), n in self.minutes.items()},
            {(minute(m), a, o, h, r, msg): n for (m, a, o, h, r, msg), n in self.problems.items()},
        )


def _pg_documents(rows: list[tuple[Any, ...]], counts: _MinuteCounts) -> dict[int, bytes]:
    """`record_canonical` of each row read by `_pg_seal_rows`, by id; each row is counted
    into `counts` on the way."""
    documents: dict[int, bytes] = {}
    long_numbers = _long_number_ids(rows)
    for found in rows:
        values = list(found)
        parse = json.loads if values[0] in long_numbers else orjson.loads
        raw = values[_RAW] = parse(values[_RAW])
        counts.add(values, raw)
        for index in _TIMES:
            values[index] = _pg_plain_time(values[index])
        documents[values[0]] = canonical_json(dict(zip(SEALED_FIELDS, values, strict=True)))
    return documents


def _read_ahead_rows(ids: list[int]) -> list[tuple[Any, ...]]:
    """`_pg_seal_rows` on this thread's own connection (a read-ahead thread's)."""
    with transaction.atomic():
        _seal_read_settings()
        raw_connection = connection.connection
        assert raw_connection is not None
        with psycopg.Cursor(raw_connection) as cursor:
            return _pg_seal_rows(cursor, ids)


def _close_connection(closed: threading.Barrier) -> None:
    connection.close()  # this thread's
    # Hold this reader until every reader has closed its own: the next close then runs on
    # another thread (the executor starts one if none is idle), never on this one again.
    with contextlib.suppress(threading.BrokenBarrierError):
        closed.wait(timeout=10)


class _ReadAhead:
    """The records of a sealing transaction, read on other connections while this
    connection hashes and writes: PostgreSQL reads and sends the next chunks while Python
    builds the canonical JSON of the one before, instead of the two taking turns (Python's
    part holds the GIL; waiting for PostgreSQL does not). With two readers PostgreSQL
    reads two chunks at once, on both cores of a small machine: with one, the hashing
    waited for its rows (docs/benchmarks.md).

    The readers are READ_AHEAD_READERS threads (so Django connections of their own) for
    the process. They see committed rows only, so they serve a sealer that runs outside
    any transaction of its caller. The rows they read cannot change under the sealer:
    records are never updated, and retention, the only thing that deletes them, waits for
    the agent's ChainHead lock that the sealer holds."""

    _executor: concurrent.futures.ThreadPoolExecutor | None = None
    _lock = threading.Lock()

    @classmethod
    def executor(cls) -> concurrent.futures.ThreadPoolExecutor:
        with cls._lock:
            if cls._executor is None:
                cls._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=READ_AHEAD_READERS, thread_name_prefix="seal-read-ahead"
                )
            return cls._executor

    @classmethod
    def rows(cls, chunks: list[list[int]]) -> Iterator[list[tuple[Any, ...]]]:
        """The rows of each chunk of ids, in order, READ_AHEAD_DEPTH chunks ahead."""
        executor = cls.executor()
        queued: collections.deque[concurrent.futures.Future[list[tuple[Any, ...]]]]
        queued = collections.deque()
        ahead = iter(chunks)
        try:
            for ids in itertools.islice(ahead, READ_AHEAD_DEPTH):
                queued.append(executor.submit(_read_ahead_rows, ids))
            while queued:
                rows = queued.popleft().result()
                following = next(ahead, None)
                if following is not None:
                    queued.append(executor.submit(_read_ahead_rows, following))
                yield rows
        finally:
            for future in queued:
                future.cancel()
            concurrent.futures.wait(queued)

    @classmethod
    def release(cls) -> None:
        """Hand the readers' connections back (to the pool, or closed)."""
        executor = cls.executor()
        closed = threading.Barrier(READ_AHEAD_READERS)
        for future in [executor.submit(_close_connection, closed) for _ in range(closed.parties)]:
            future.result()

    @classmethod
    def forget(cls) -> None:
        """In a forked child: the parent's reader threads do not exist there."""
        cls._executor = None
        cls._lock = threading.Lock()


os.register_at_fork(after_in_child=_ReadAhead.forget)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while rows become canonical JSON: that makes
    tens of thousands of containers per chunk and no reference cycles (reference counting
    frees them), while each collection the allocations trigger walks the whole heap (in a
    large process a quarter of the sealer's time: docs/benchmarks.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def seal_postgresql(
    agent_id: int, ids: list[int], seq: int, prev: str, *, read_ahead: bool
) -> tuple[int, str, int]:
    """Read (and count in the rollups), hash and COPY the seals of `ids` on one
    server-side-binding cursor: the id list travels as one array parameter, the seals as
    COPY text; with `read_ahead`, the records come from `_ReadAhead` in chunks, and each
    chunk's seals are sent while the next is hashed. (last seq, hash, count)"""
    raw_connection = connection.connection
    assert raw_connection is not None
    counts = _MinuteCounts()
    sealed = 0
    tail = f"\t{agent_id}\t{timezone.now().astimezone(dt.UTC).isoformat()}\n"
    with psycopg.Cursor(raw_connection) as cursor:
        if read_ahead:
            chunks = [ids[i : i + READ_AHEAD_CHUNK] for i in range(0, len(ids), READ_AHEAD_CHUNK)]
            read: Iterator[list[tuple[Any, ...]]] = _ReadAhead.rows(chunks)
        else:
            chunks, read = [ids], iter([_pg_seal_rows(cursor, ids)])
        with _collector_paused(), cursor.copy(_PG_SEAL_COPY_SQL) as copy:
            for chunk, rows in zip(chunks, read, strict=True):
                seals = chain_links(chunk, _pg_documents(rows, counts), seq, prev)
                if seals:
                    seq, prev = seals[-1][1], seals[-1][3]
                    sealed += len(seals)
                    copy.write("".join(f"{pk}\t{n}\t{p}\t{h}{tail}" for pk, n, p, h in seals))
    counts.counted()
    return seq, prev, sealed


def _seal_read_settings() -> None:
    """The sealer's reads never depend on statistics autovacuum may not have gathered yet
    (a partition filling faster than it is analyzed, or autovacuum off): they read records
    by id only, yet without statistics PostgreSQL chose a sequential scan of the whole
    partition and JIT-compiled it (11.4 s instead of 2.2–2.5 s per 40,000 records at 2.4M
    unanalyzed rows; docs/benchmarks.md). No sequential scan where an index serves, no JIT."""
    with connection.cursor() as cursor:
        cursor.execute(_READ_SETTINGS)


_READ_SETTINGS = "SET LOCAL jit = off; SET LOCAL enable_seqscan = off"


def seal_transaction_settings() -> None:
    """This seal transaction's PostgreSQL settings: those of its reads
    (`_seal_read_settings`), and it commits without waiting for its WAL flush
    (asynchronous commit). Sealing is derived data: a crash may lose the last few hundred
    milliseconds of committed seals, but atomically (seals, rollup counts, chain head and
    the pending rows they consumed go together), so those records are simply pending again
    and the next seal computes the very same chain positions and hashes from the stored
    records. Any later synchronous commit (ingest, retention) flushes the WAL past it
    first, so nothing durable can build on a lost seal."""
    with connection.cursor() as cursor:
        cursor.execute(f"{_READ_SETTINGS}; SET LOCAL synchronous_commit = off")


def read_ahead_release() -> None:
    """Hand the read-ahead thread's connection back (after a `chain_seal` that used it)."""
    _ReadAhead.release()
