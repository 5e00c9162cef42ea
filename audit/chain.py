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
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from agents.models import Agent
from audit import rollups
from audit.models import (
    GENESIS_HASH,
    ChainHead,
    InterceptionRecord,
    RecordSeal,
    RecordSealPending,
)
from console import embedded

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
PENDING_BATCHES_PER_TRANSACTION = 10
VERIFY_CHUNK = 2000


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def record_canonical(values: Mapping[str, Any]) -> bytes:
    """Canonical JSON of a record's stored fields: sorted keys, no spaces, UTF-8, i.e.
    `json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` encoded
    as UTF-8 (orjson writes the same bytes, several times faster)."""
    document = {name: _plain(values[name]) for name in SEALED_FIELDS}
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)


def chain_digest(prev_hash: str, values: Mapping[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + record_canonical(values)).hexdigest()


def chain_schedule_seal(agent_id: int) -> None:
    """Queue sealing for one agent (runs inline where Celery is eager)."""
    from audit.tasks import records_seal_chain

    records_seal_chain.delay(agent_id)


def _lock_head(agent_id: int) -> ChainHead:
    ChainHead.objects.bulk_create([ChainHead(agent_id=agent_id)], ignore_conflicts=True)
    return ChainHead.objects.select_for_update().get(agent_id=agent_id)


def _insert_seals(agent_id: int, seals: list[tuple[int, int, str, str]], now: dt.datetime) -> None:
    if not seals:
        return
    if embedded.database_is_postgresql():
        # One statement from column arrays: the ORM's per-object cost was most of sealing.
        columns = list(zip(*seals, strict=True))
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO audit_recordseal "
                "(record_id, chain_seq, chain_prev, chain_hash, agent_id, sealed_at) "
                "SELECT r, s, p, h, %s, %s "
                "FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[]) AS u(r, s, p, h)",
                [
                    agent_id,
                    now,
                    list(columns[0]),
                    list(columns[1]),
                    list(columns[2]),
                    list(columns[3]),
                ],
            )
        return
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
    while True:
        with transaction.atomic():
            head = _lock_head(agent_id)
            pending = list(
                RecordSealPending.objects.filter(agent_id=agent_id).order_by("id")[
                    :PENDING_BATCHES_PER_TRANSACTION
                ]
            )
            if not pending:
                return total
            ids = [int(pk) for batch in pending for pk in batch.record_ids]
            rows = {
                row["id"]: row
                for row in InterceptionRecord.objects.filter(pk__in=ids).values(*SEALED_FIELDS)
            }
            now = timezone.now()
            seals: list[tuple[int, int, str, str]] = []
            seq, prev = head.last_seq, head.last_hash
            for pk in ids:
                row = rows.get(pk)
                if row is None:
                    continue
                seq += 1
                digest = chain_digest(prev, row)
                seals.append((pk, seq, prev, digest))
                prev = digest
            _insert_seals(agent_id, seals, now)
            rollups.records_counted(rows[seal[0]] for seal in seals)
            RecordSealPending.objects.filter(pk__in=[batch.pk for batch in pending]).delete()
            head.last_seq, head.last_hash = seq, prev
            head.save(update_fields=["last_seq", "last_hash", "updated_at"])
            total += len(seals)


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
