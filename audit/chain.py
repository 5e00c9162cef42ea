"""Tamper evidence: a per-agent hash chain over stored records.

Sealing (`chain_seal`, run by the `audit.tasks.records_seal_chain` task after each ingest
commit and periodically) takes the agent's `ChainHead` row FOR UPDATE, so concurrent
sealers queue instead of forking the chain, and appends the pending records in order:

    chain_seq  = previous chain_seq + 1                     (per agent, from 1)
    chain_prev = previous chain_hash                        (64 zeros before the first)
    chain_hash = sha256(chain_prev + canonical JSON of the record's stored fields)

`chain_verify` walks base_seq+1 … last_seq and reports the FIRST problem: a record whose
fields no longer reproduce its hash (altered), a missing chain position or record
(deleted), a record whose own hash holds but which does not follow its predecessor
(reordered), and records stored outside the chain (inserted). Retention moves
base_seq/base_hash forward past the purged prefix, so verification starts after it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import datetime as dt
import gc
import hashlib
import itertools
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
import redis
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from psycopg.adapt import Loader

from agents.models import Agent
from audit import rollups
from audit.models import (
    GENESIS_HASH,
    ChainHead,
    InterceptionPoint,
    InterceptionRecord,
    RecordSeal,
    RecordSealPending,
)
from console import embedded
from console.cachepool import shared_redis

# Every stored column of a record: changing any of them breaks its hash. Deliberately a
# literal, not derived from audit.record_fields: this list is part of the hash of every
# sealed record, so adding, removing or renaming a field here makes existing chains fail
# verification. Pinned by tests/audit/test_record_fields.py.
SEALED_FIELDS: tuple[str, ...] = (
    "id",
    "agent_id",
    "custom_agent",
    "session_id",
    "sequence",
    "interception_point",
    "mode",
    "decision",
    "outcome",
    "reason",
    "resolved_by",
    "decided_by",
    "decided_hook",
    "fold_truncated",
    "input_identity",
    "enforced_identity",
    "timestamp",
    "received_at",
    "hook_ids",
    "tool_name",
    "framework",
    "revision",
    "raw",
)
PENDING_BATCHES_PER_TRANSACTION = 20
VERIFY_CHUNK = 2000


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def record_canonical(values: Mapping[str, Any]) -> bytes:
    """Canonical JSON of a record's stored fields: sorted keys, no spaces, UTF-8, i.e.
    `json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` encoded
    as UTF-8 (orjson writes the same bytes, several times faster)."""
    return _canonical_json({name: _plain(values[name]) for name in SEALED_FIELDS})


def _canonical_json(document: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        # An integer past 64 bits (a big number in an open member of the verdict, or a
        # float like 1e300 that jsonb hands back as an integer): the definition itself.
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")


def chain_digest(prev_hash: str, values: Mapping[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + record_canonical(values)).hexdigest()


# How long a mark says "a seal task of this agent is queued" (`chain_schedule_seal`). Only
# a task that never starts (lost by the broker, its worker gone before it ran) leaves one
# behind, and that delays nothing beyond it: the beat seals every agent every 30 s anyway.
SEAL_QUEUED_SECONDS = 10


def _seal_queued_key(agent_id: int) -> str:
    return f"console:{connection.settings_dict['NAME']}:seal-queued:{agent_id}"


def chain_schedule_seal(agent_id: int) -> None:
    """Queue sealing for one agent after an ingest commit (inline where Celery is eager).

    One task per agent is enough while one is queued: the task clears the agent's mark
    (`seal_task_started`) before it reads the pending batches, so a batch committed before
    that is sealed by it, and a batch committed after it sets the mark again and queues
    the next task. Without the mark every ingest request published a task (a Celery
    publish, about 3 ms of the request), and a worker that fell behind then ran one that
    found nothing to seal per request it had missed. A Redis that cannot say queues the
    task anyway."""
    from audit.tasks import records_seal_chain

    if settings.REDIS_URL and not records_seal_chain.app.conf.task_always_eager:
        try:
            marked = shared_redis().set(
                _seal_queued_key(agent_id), 1, nx=True, ex=SEAL_QUEUED_SECONDS
            )
        except redis.RedisError:
            marked = True
        if not marked:
            return
    records_seal_chain.delay(agent_id)


def seal_task_started(agent_id: int) -> None:
    """The agent's seal task runs now: the next ingest commit queues another."""
    if settings.REDIS_URL:
        try:
            shared_redis().delete(_seal_queued_key(agent_id))
        except redis.RedisError:
            pass  # the mark expires by itself


def _lock_head(agent_id: int) -> ChainHead:
    ChainHead.objects.bulk_create([ChainHead(agent_id=agent_id)], ignore_conflicts=True)
    return ChainHead.objects.select_for_update().get(agent_id=agent_id)


def _insert_seals(agent_id: int, seals: list[tuple[int, int, str, str]], now: dt.datetime) -> None:
    """The portable path: the ORM (PostgreSQL COPYs them, see _seal_postgresql)."""
    RecordSeal.objects.bulk_create(
        [
            RecordSeal(
                record_id=pk,
                agent_id=agent_id,
                chain_seq=seq,
                chain_prev=prev,
                chain_hash=digest,
                sealed_at=now,
            )
            for pk, seq, prev, digest in seals
        ],
        batch_size=500,
    )


def _chain(
    ids: list[int],
    canonical: Mapping[int, bytes],
    seq: int,
    prev: str,
) -> list[tuple[int, int, str, str]]:
    """(record id, chain_seq, chain_prev, chain_hash) of each id in order, from `seq`/`prev`,
    given each record's canonical JSON (ids whose record is gone, e.g. purged before it was
    sealed, are skipped)."""
    seals: list[tuple[int, int, str, str]] = []
    sha256 = hashlib.sha256
    for pk in ids:
        document = canonical.get(pk)
        if document is None:
            continue
        seq += 1
        digest = sha256(prev.encode("ascii") + document).hexdigest()
        seals.append((pk, seq, prev, digest))
        prev = digest
    return seals


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
# READ_AHEAD_MIN records, the records are read READ_AHEAD_CHUNK at a time on a second
# connection, up to READ_AHEAD_DEPTH chunks ahead of the hashing (`_ReadAhead`).
READ_AHEAD_BATCHES_PER_TRANSACTION = 100
READ_AHEAD_CHUNK = 2000
READ_AHEAD_MIN = 2 * READ_AHEAD_CHUNK
READ_AHEAD_DEPTH = 2


class _JsonbBytes(Loader):
    """jsonb in text format, handed over as the bytes PostgreSQL sent (no decoding)."""

    def load(self, data: Any) -> bytes:
        return bytes(data)


def _pg_plain_time(text: str) -> str:
    # strftime("%Y") writes years before 1000 unpadded (glibc): "999-…", not "0999-…".
    return text if text[0] != "0" else f"{int(text[:4])}{text[4:]}"


# orjson reads an integer past 64 bits as a float where json.loads (the ORM's reader) keeps
# an int: a text with 19 digits in a row goes through json.loads. Found by mapping every
# digit to 0 and looking for 19 zeros: about 8 times cheaper than a regular expression.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def _pg_raw(text: bytes) -> Any:
    if _LONG_DIGITS in text.translate(_DIGITS_TO_ZERO):
        return json.loads(text)
    return orjson.loads(text)


def _pg_id_array(ids: list[int]) -> str:
    """`ids` as a PostgreSQL array literal, sent as one text parameter (cast by the query to
    bigint[]): about 15 ms less per 10,000 ids than psycopg adapting a list of ints."""
    return "{" + ",".join(map(str, ids)) + "}"


def _pg_seal_rows(cursor: Any, ids: list[int]) -> list[tuple[Any, ...]]:
    """The sealed columns of the records `ids` (in the `_PG_SEAL_READ_SQL` forms)."""
    cursor.adapters.register_loader("jsonb", _JsonbBytes)
    cursor.execute(_PG_SEAL_READ_SQL, [_pg_id_array(ids)])
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
    for found in rows:
        values = list(found)
        raw = values[_RAW] = _pg_raw(values[_RAW])
        counts.add(values, raw)
        for index in _TIMES:
            values[index] = _pg_plain_time(values[index])
        documents[values[0]] = _canonical_json(dict(zip(SEALED_FIELDS, values, strict=True)))
    return documents


def _read_ahead_rows(ids: list[int]) -> list[tuple[Any, ...]]:
    """`_pg_seal_rows` on this thread's own connection (the read-ahead thread's)."""
    with transaction.atomic():
        _seal_read_settings()
        raw_connection = connection.connection
        assert raw_connection is not None
        with psycopg.Cursor(raw_connection) as cursor:
            return _pg_seal_rows(cursor, ids)


def _close_connection() -> None:
    connection.close()  # this thread's


class _ReadAhead:
    """The records of a sealing transaction, read on a second connection while this
    connection hashes and writes: PostgreSQL reads and sends the next chunk while Python
    builds the canonical JSON of the one before, instead of the two taking turns (Python's
    part holds the GIL; waiting for PostgreSQL does not).

    The reader is one thread (so one Django connection of its own) for the process. It
    sees committed rows only, so it serves a sealer that runs outside any transaction of
    its caller. The rows it reads cannot change under the sealer: records are never
    updated, and retention, the only thing that deletes them, waits for the agent's
    ChainHead lock that the sealer holds."""

    _executor: concurrent.futures.ThreadPoolExecutor | None = None
    _lock = threading.Lock()

    @classmethod
    def executor(cls) -> concurrent.futures.ThreadPoolExecutor:
        with cls._lock:
            if cls._executor is None:
                cls._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="seal-read-ahead"
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
        """Hand the reader's connection back (to the pool, or closed)."""
        cls.executor().submit(_close_connection).result()


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


def _seal_postgresql(
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
                seals = _chain(chunk, _pg_documents(rows, counts), seq, prev)
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
        cursor.execute("SET LOCAL jit = off; SET LOCAL enable_seqscan = off")


def _seal_transaction_settings() -> None:
    """This seal transaction's PostgreSQL settings: those of its reads
    (`_seal_read_settings`), and it commits without waiting for its WAL flush
    (asynchronous commit). Sealing is derived data: a crash may lose the last few hundred
    milliseconds of committed seals, but atomically (seals, rollup counts, chain head and
    the pending rows they consumed go together), so those records are simply pending again
    and the next seal computes the very same chain positions and hashes from the stored
    records. Any later synchronous commit (ingest, retention) flushes the WAL past it
    first, so nothing durable can build on a lost seal."""
    _seal_read_settings()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")


def chain_seal(agent_id: int) -> int:
    """Seal every pending record of one agent; returns how many were sealed."""
    total = 0
    postgresql = embedded.database_is_postgresql()
    # The read-ahead's connection sees committed rows only: not inside a caller's
    # transaction (a test's, say), where the pending records may not be committed.
    may_read_ahead = postgresql and not connection.in_atomic_block
    batches = (
        READ_AHEAD_BATCHES_PER_TRANSACTION if may_read_ahead else PENDING_BATCHES_PER_TRANSACTION
    )
    read_ahead_used = False
    try:
        while True:
            with transaction.atomic():
                if postgresql:
                    _seal_transaction_settings()
                head = _lock_head(agent_id)
                pending = list(
                    RecordSealPending.objects.filter(agent_id=agent_id).order_by("id")[:batches]
                )
                if not pending:
                    return total
                ids = [int(pk) for batch in pending for pk in batch.record_ids]
                if postgresql:
                    read_ahead = may_read_ahead and len(ids) >= READ_AHEAD_MIN
                    read_ahead_used |= read_ahead
                    seq, prev, sealed = _seal_postgresql(
                        agent_id, ids, head.last_seq, head.last_hash, read_ahead=read_ahead
                    )
                else:
                    rows = {
                        row["id"]: row
                        for row in InterceptionRecord.objects.filter(pk__in=ids).values(
                            *SEALED_FIELDS
                        )
                    }
                    documents = {pk: record_canonical(row) for pk, row in rows.items()}
                    seals = _chain(ids, documents, head.last_seq, head.last_hash)
                    _insert_seals(agent_id, seals, timezone.now())
                    rollups.records_counted(rows[seal[0]] for seal in seals)
                    seq, prev = seals[-1][1:4:2] if seals else (head.last_seq, head.last_hash)
                    sealed = len(seals)
                RecordSealPending.objects.filter(pk__in=[batch.pk for batch in pending]).delete()
                head.last_seq, head.last_hash = seq, prev
                head.save(update_fields=["last_seq", "last_hash", "updated_at"])
                total += sealed
    finally:
        if read_ahead_used:
            _ReadAhead.release()


def chain_seal_all() -> int:
    """Seal the pending records of every agent."""
    agent_ids = RecordSealPending.objects.order_by().values_list("agent_id", flat=True).distinct()
    return sum(chain_seal(agent_id) for agent_id in list(agent_ids))


@dataclass(frozen=True)
class ChainProblem:
    kind: str  # altered | deleted | reordered | inserted
    chain_seq: int | None
    record_id: int | None
    detail: str


@dataclass(frozen=True)
class ChainReport:
    agent_slug: str
    verified: int
    pending: int
    problem: ChainProblem | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def _link_problem(agent: Agent, seal: Mapping[str, Any], expected_seq: int) -> ChainProblem:
    moved = RecordSeal.objects.filter(agent=agent, chain_hash=seal["chain_prev"]).exists()
    if moved:
        return ChainProblem(
            "reordered",
            expected_seq,
            seal["record_id"],
            f"record {seal['record_id']} at chain_seq {expected_seq} was sealed after a "
            "different record than the one now before it",
        )
    return ChainProblem(
        "deleted",
        expected_seq,
        seal["record_id"],
        f"the record sealed before record {seal['record_id']} (chain_seq {expected_seq}) is gone",
    )


def _walk(agent: Agent, head: ChainHead | None) -> tuple[int, int, str, ChainProblem | None]:
    expected_seq = (head.base_seq if head else 0) + 1
    expected_prev = head.base_hash if head else GENESIS_HASH
    verified = 0
    while True:
        seals = list(
            RecordSeal.objects.filter(agent=agent, chain_seq__gte=expected_seq)
            .order_by("chain_seq")
            .values("record_id", "chain_seq", "chain_prev", "chain_hash")[:VERIFY_CHUNK]
        )
        if not seals:
            return verified, expected_seq, expected_prev, None
        ids = [seal["record_id"] for seal in seals]
        rows = {
            row["id"]: row
            for row in InterceptionRecord.objects.filter(pk__in=ids).values(*SEALED_FIELDS)
        }
        for seal in seals:
            record_id = seal["record_id"]
            if seal["chain_seq"] != expected_seq:
                detail = f"chain_seq {expected_seq}..{seal['chain_seq'] - 1} missing"
                return (
                    verified,
                    expected_seq,
                    expected_prev,
                    ChainProblem("deleted", expected_seq, None, detail),
                )
            row = rows.get(record_id)
            if row is None:
                detail = f"record {record_id} at chain_seq {expected_seq} is missing"
                return (
                    verified,
                    expected_seq,
                    expected_prev,
                    ChainProblem("deleted", expected_seq, record_id, detail),
                )
            if chain_digest(seal["chain_prev"], row) != seal["chain_hash"]:
                detail = (
                    f"record {record_id} at chain_seq {expected_seq} no longer matches its hash"
                )
                return (
                    verified,
                    expected_seq,
                    expected_prev,
                    ChainProblem("altered", expected_seq, record_id, detail),
                )
            if seal["chain_prev"] != expected_prev:
                return (
                    verified,
                    expected_seq,
                    expected_prev,
                    _link_problem(agent, seal, expected_seq),
                )
            expected_prev = seal["chain_hash"]
            expected_seq += 1
            verified += 1


def verifiable_agents(slug: str | None = None) -> QuerySet[Agent]:
    """The agents `chain_verify` walks, by slug: `slug` alone (none if unknown), else every
    agent with records or a chain."""
    agents = Agent.objects.order_by("slug")
    if slug:
        return agents.filter(slug=slug)
    with_records = InterceptionRecord.objects.values("agent_id")
    with_chain = ChainHead.objects.values("agent_id")
    return agents.filter(Q(pk__in=with_records) | Q(pk__in=with_chain))


def chain_verify(agent: Agent) -> ChainReport:
    """Walk one agent's chain; the report names the first problem, if any.

    Every read sees one snapshot of the database (REPEATABLE READ on PostgreSQL; a SQLite
    read transaction is one already): ingest and sealing go on while a chain is verified,
    and a record stored or sealed between two reads must not look inserted or altered."""
    # The isolation level can only be set first thing in a transaction; inside a caller's
    # transaction (a test's, say) the caller's snapshot rules apply.
    outer = connection.in_atomic_block
    with transaction.atomic():
        if embedded.database_is_postgresql() and not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return _chain_verify(agent)


def _chain_verify(agent: Agent) -> ChainReport:
    head = ChainHead.objects.filter(agent=agent).first()
    pending_ids = {
        int(pk)
        for ids in RecordSealPending.objects.filter(agent=agent).values_list(
            "record_ids", flat=True
        )
        for pk in ids
    }
    verified, next_seq, tip, problem = _walk(agent, head)
    last_seq = head.last_seq if head else 0
    if problem is None and next_seq - 1 < last_seq:
        problem = ChainProblem(
            "deleted", next_seq, None, f"chain_seq {next_seq}..{last_seq} missing at the end"
        )
    if problem is None and head is not None and tip != head.last_hash:
        problem = ChainProblem(
            "altered", last_seq, None, "the last sealed record does not match the chain head"
        )
    if problem is None:
        unsealed = (
            InterceptionRecord.objects.filter(agent=agent, seal__isnull=True)
            .exclude(pk__in=pending_ids)
            .order_by("id")
            .values_list("id", flat=True)
            .first()
        )
        if unsealed is not None:
            problem = ChainProblem(
                "inserted", None, unsealed, f"record {unsealed} is neither sealed nor pending"
            )
    return ChainReport(
        agent_slug=agent.slug, verified=verified, pending=len(pending_ids), problem=problem
    )
