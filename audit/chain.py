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

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from agents.models import Agent
from audit import chain_pg, rollups
from audit.chain_hash import SEALED_FIELDS, chain_digest, chain_links, record_canonical
from audit.models import (
    GENESIS_HASH,
    ChainHead,
    InterceptionRecord,
    RecordSeal,
    RecordSealPending,
)
from console import embedded
from console.cachepool import shared_redis

PENDING_BATCHES_PER_TRANSACTION = 20
VERIFY_CHUNK = 2000


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
    """The portable path: the ORM (PostgreSQL COPYs them, see audit.chain_pg)."""
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


def chain_seal(agent_id: int) -> int:
    """Seal every pending record of one agent; returns how many were sealed."""
    total = 0
    postgresql = embedded.database_is_postgresql()
    # The read-ahead's connection sees committed rows only: not inside a caller's
    # transaction (a test's, say), where the pending records may not be committed.
    may_read_ahead = postgresql and not connection.in_atomic_block
    batches = (
        chain_pg.READ_AHEAD_BATCHES_PER_TRANSACTION
        if may_read_ahead
        else PENDING_BATCHES_PER_TRANSACTION
    )
    read_ahead_used = False
    try:
        while True:
            with transaction.atomic():
                if postgresql:
                    chain_pg.seal_transaction_settings()
                head = _lock_head(agent_id)
                pending = list(
                    RecordSealPending.objects.filter(agent_id=agent_id).order_by("id")[:batches]
                )
                if not pending:
                    return total
                ids = [int(pk) for batch in pending for pk in batch.record_ids]
                if postgresql:
                    read_ahead = may_read_ahead and len(ids) >= chain_pg.READ_AHEAD_MIN
                    read_ahead_used |= read_ahead
                    seq, prev, sealed = chain_pg.seal_postgresql(
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
                    seals = chain_links(ids, documents, head.last_seq, head.last_hash)
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
            chain_pg.read_ahead_release()


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
