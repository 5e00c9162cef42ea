"""Retention of interception records (docs/audit-storage.md, "Retention").

Two ways out, both in chain order and both moving the agent's chain checkpoint
(`ChainHead.base_seq/base_hash`) past what went, so the remaining chain verifies:

- **partition drop** (PostgreSQL, the table partitioned by month, audit.partitions): a
  monthly partition whose upper bound is at or before the cutoff goes whole (DETACH, DROP)
  when, for every agent with rows in it, all its rows are sealed and are exactly the next
  chain positions after the checkpoint. Its seals are deleted by chain range. Months go
  oldest first; the first month that does not qualify stops the pass.
- **row delete** (everything else: the SQLite default, the DEFAULT partition's rows, a
  month held back by a late record of another month in its chain range): sealed records
  older than the cutoff, per agent in chain order, in batches.

`records_remove` is the one place where records are removed, by either way, and where the
dashboard rollups (audit.rollups) forget them in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from itertools import takewhile
from typing import Any

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from agents.models import Agent
from audit import partitions, rollups
from audit.models import ChainHead, InterceptionRecord, RecordSeal
from console.actors import Actor
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record

logger = logging.getLogger(__name__)

PURGE_BATCH = 5000
PURGE_BATCHES_PER_RUN = 100


def purge_cutoff(now: dt.datetime, retention_days: int) -> dt.datetime:
    """The cutoff the periodic purge uses. With monthly partitions it is the first instant
    of the cutoff's month: only whole months go (by partition drop), never rows at the
    cutoff edge, so records are kept up to one month longer than the retention setting."""
    cutoff = now - dt.timedelta(days=retention_days)
    return partitions.month_floor(cutoff) if partitions.is_partitioned() else cutoff


def records_remove(
    cursor: Any,
    *,
    ids: Sequence[int] = (),
    before: dt.datetime | None = None,
    partition: partitions.Partition | None = None,
    seal_ranges: Sequence[tuple[int, int, int]] = (),
) -> None:
    """Remove records and their seals: the rows `ids` (all older than `before`, which
    lets PostgreSQL skip the newer partitions) with their seals, or a whole `partition`
    with the seals of `seal_ranges` (agent_id, first chain_seq, last chain_seq). The
    caller holds the agents' chain heads and moves their checkpoints."""
    seal_table = connection.ops.quote_name(RecordSeal._meta.db_table)
    if partition is not None:
        rollups.rollups_drop_range(partition.lower, partition.upper)
        for agent_id, first, last in seal_ranges:
            cursor.execute(
                f"DELETE FROM {seal_table} WHERE agent_id = %s "  # noqa: S608 - fixed names
                "AND chain_seq BETWEEN %s AND %s",
                [agent_id, first, last],
            )
        partitions.partition_drop(cursor, partition)
        return
    rollups.records_removed(list(ids))
    record_table = connection.ops.quote_name(InterceptionRecord._meta.db_table)
    marks = ", ".join(["%s"] * len(ids))
    cursor.execute(f"DELETE FROM {seal_table} WHERE record_id IN ({marks})", list(ids))  # noqa: S608
    bound = ' AND "timestamp" < %s' if before is not None else ""
    cursor.execute(
        f"DELETE FROM {record_table} WHERE id IN ({marks}){bound}",  # noqa: S608 - fixed names
        [*ids, *([before] if before is not None else [])],
    )


def _purged_event(
    *,
    actor: Actor | None,
    agent: Agent,
    before: dt.datetime,
    head: ChainHead,
    purged: int,
    **extra: Any,
) -> None:
    head.purged += purged
    head.save(update_fields=["base_seq", "base_hash", "purged", "updated_at"])
    governance_event_record(
        actor=actor,
        action=GovernanceAction.RECORDS_PURGED,
        summary=f"Purged {purged} records of {agent.slug} older than {before:%Y-%m-%d %H:%M} UTC",
        agent=agent,
        after={
            "before": before.isoformat(),
            "purged": purged,
            "chain_base_seq": head.base_seq,
            "chain_base_hash": head.base_hash,
            **extra,
        },
    )


@transaction.atomic
def _purge_agent_rows(
    *, actor: Actor | None, agent: Agent, before: dt.datetime, batch_size: int
) -> int:
    head = ChainHead.objects.select_for_update().get(agent=agent)
    purged = 0
    for _ in range(PURGE_BATCHES_PER_RUN):
        seals = list(
            RecordSeal.objects.filter(agent=agent, chain_seq__gt=head.base_seq)
            .order_by("chain_seq")
            .values("record_id", "chain_seq", "chain_hash", "record__timestamp")[:batch_size]
        )
        # Only a prefix of the chain goes, so what remains still verifies from base_*.
        prefix = list(takewhile(lambda seal: seal["record__timestamp"] < before, seals))
        if not prefix:
            break
        with connection.cursor() as cursor:
            records_remove(cursor, ids=[seal["record_id"] for seal in prefix], before=before)
        head.base_seq, head.base_hash = prefix[-1]["chain_seq"], prefix[-1]["chain_hash"]
        purged += len(prefix)
        if len(prefix) < len(seals) or len(seals) < batch_size:
            break
    if purged:
        _purged_event(actor=actor, agent=agent, before=before, head=head, purged=purged)
    return purged


@transaction.atomic
def _drop_partition(
    *, actor: Actor | None, partition: partitions.Partition, before: dt.datetime
) -> int | None:
    """Drop one monthly partition if it holds exactly a sealed chain prefix of every agent
    with rows in it; the number of records dropped, or None when it must wait."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('lock_timeout', %s, true)", [str(partitions.DDL_LOCK_TIMEOUT_MS)]
        )
        # Deferred foreign-key checks of rows written earlier in this transaction fire
        # now: PostgreSQL refuses to drop a table with pending trigger events.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # No record lands in the month while it is checked and dropped.
        cursor.execute(f"LOCK TABLE {connection.ops.quote_name(partition.name)} IN SHARE MODE")
        stats = partitions.partition_stats(cursor, partition)
        heads = {
            head.agent_id: head
            for head in ChainHead.objects.select_for_update()
            .filter(agent_id__in=[row[0] for row in stats])
            .order_by("agent_id")
        }
        for agent_id, rows, sealed, first, last in stats:
            head = heads.get(agent_id)
            if (
                head is None
                or sealed != rows
                or first != head.base_seq + 1
                or last - first + 1 != rows
            ):
                return None
        tips = {
            (seal.agent_id, seal.chain_seq): seal.chain_hash
            for agent_id, _rows, _sealed, _first, last in stats
            for seal in RecordSeal.objects.filter(agent_id=agent_id, chain_seq=last).only(
                "agent_id", "chain_seq", "chain_hash"
            )
        }
        records_remove(
            cursor,
            partition=partition,
            seal_ranges=[(agent_id, first, last) for agent_id, _r, _s, first, last in stats],
        )
    agents = Agent.objects.in_bulk([row[0] for row in stats])
    for agent_id, rows, _sealed, _first, last in stats:
        head = heads[agent_id]
        head.base_seq, head.base_hash = last, tips[(agent_id, last)]
        _purged_event(
            actor=actor,
            agent=agents[agent_id],
            before=before,
            head=head,
            purged=rows,
            partition=partition.name,
        )
    return sum(row[1] for row in stats)


def _purge_partitions(*, actor: Actor | None, before: dt.datetime) -> int:
    with connection.cursor() as cursor:
        due = [p for p in partitions.monthly_partitions(cursor) if p.upper <= before]
    total = 0
    for partition in due:
        try:
            dropped = _drop_partition(actor=actor, partition=partition, before=before)
        except OperationalError as exc:  # its lock not granted in time: the next run retries
            logger.warning("records purge: %s not dropped: %s", partition.name, exc)
            break
        if dropped is None:
            break
        total += dropped
    return total


def records_purge(
    *, actor: Actor | None, before: dt.datetime, batch_size: int = PURGE_BATCH
) -> int:
    """Remove sealed records with timestamp < `before`, oldest chain positions first, and
    move each agent's chain checkpoint past them: first whole monthly partitions (when the
    table is partitioned), then row by row. Unsealed records wait for their seal; a record
    stays while an older-positioned one in its chain is still kept."""
    total = _purge_partitions(actor=actor, before=before) if partitions.is_partitioned() else 0
    for agent in Agent.objects.filter(pk__in=ChainHead.objects.values("agent_id")):
        total += _purge_agent_rows(actor=actor, agent=agent, before=before, batch_size=batch_size)
    rollups.minute_rows_prune(timezone.now())
    return total
