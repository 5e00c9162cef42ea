"""Writes of the audit app: record ingest, dead-letter reports, retention, export events.

`records_ingest` is the ingest fast path: on PostgreSQL a COPY per batch, or one INSERT … ON CONFLICT DO NOTHING
when the batch holds an already stored key (see docs/audit-storage.md).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from agents.models import Agent
from agents.selectors import REASON_HOOK_KEYS_SQL, reason_hook_keys
from audit.chain import chain_schedule_seal
from audit.dead_letters import DeadLetterRow
from audit.models import (
    DeadLetterReport,
    InterceptionRecord,
    RecordExport,
    RecordSealPending,
)
from audit.partitions import untimed_replays_dropped
from audit.record_copy import copy_sql, pg_array_literal, write_rows
from audit.record_fields import INGEST_COLUMNS, INGESTED_FIELDS, Kind
from audit.record_rows import RecordRow, ValidItem, strip_unopted_reasons
from audit.retention import records_purge  # noqa: F401 - retention's entry point, re-exported
from console import embedded
from console.actors import Actor, actor_label, actor_user
from console.errors import Unavailable
from console.governance.actions import GovernanceAction
from console.governance.models import GovernanceEvent
from console.governance.services import governance_event_record


@dataclass(frozen=True)
class IngestResult:
    accepted: int
    duplicates: int


# PostgreSQL element type of each kind of ingested column in the column arrays of the
# INSERT fallback, and the cast from it (lists travel as array literals, JSON as text).
_PG_TYPES: dict[Kind, str] = {
    Kind.BIGINT: "bigint",
    Kind.INTEGER: "integer",
    Kind.TEXT: "text",
    Kind.BOOLEAN: "boolean",
    Kind.DATETIME: "timestamptz",
    Kind.TEXT_LIST: "text",
    Kind.JSON: "text",
}
_PG_CASTS: dict[Kind, str] = {Kind.TEXT_LIST: "::text[]", Kind.JSON: "::jsonb"}


# A batch's first statement sets the transaction's timeouts, reads the keys of the agent's
# hooks that opted in to "record its reason" (`strip_unopted_reasons`) and, for the COPY,
# takes the batch's ids and queues them for sealing, in one round trip. The seal-queue
# row's foreign key is also what keeps the batch from being stored for an agent deleted
# meanwhile (its check at commit waits for the agent's row; the records themselves have no
# foreign key, migration 0015). Named params: lock, statement, agent; the COPY's also
# sequence, count, now. Its last two columns: the opted-in keys, then (COPY) the ids.
_PG_START_COLUMNS = (
    "set_config('lock_timeout', %(lock)s, true), "
    "set_config('statement_timeout', %(statement)s, true), "
    f"{REASON_HOOK_KEYS_SQL}"
)
_PG_COPY_START_SQL = (
    "WITH ids AS MATERIALIZED "  # noqa: S608 - fixed names
    "(SELECT nextval(%(sequence)s::regclass) AS id FROM generate_series(1, %(count)s)), "
    "pending AS (INSERT INTO audit_recordsealpending (agent_id, record_ids, created_at) "
    "SELECT %(agent)s, jsonb_agg(id ORDER BY id), %(now)s FROM ids) "
    f"SELECT {_PG_START_COLUMNS}, (SELECT array_agg(id ORDER BY id) FROM ids)"
)
_PG_INSERT_START_SQL = f"SELECT {_PG_START_COLUMNS}"


def _pg_insert_sql() -> str:
    """The race fallback, one statement: insert the batch from column arrays, skip duplicates, and queue the
    stored ids for sealing. Params: the column arrays, then agent, now, agent, now."""
    arrays = ", ".join(f"%s::{_PG_TYPES[field.kind]}[]" for field in INGESTED_FIELDS)
    names = ", ".join(INGEST_COLUMNS)
    selects = ", ".join(
        f"b.{name}{_PG_CASTS.get(field.kind, '')}"
        for name, field in zip(INGEST_COLUMNS, INGESTED_FIELDS, strict=True)
    )
    return (
        f"WITH b({names}) AS (SELECT * FROM unnest({arrays})), "  # noqa: S608 - fixed names
        f"ins AS (INSERT INTO audit_interceptionrecord (agent_id, received_at, {names}) "
        f"SELECT %s, %s, {selects} FROM b "
        "ON CONFLICT (session_id, sequence, agent_id, timestamp) DO NOTHING RETURNING id) "
        "INSERT INTO audit_recordsealpending (agent_id, record_ids, created_at) "
        "SELECT %s, jsonb_agg(id ORDER BY id), %s FROM ins HAVING count(*) > 0 "
        "RETURNING jsonb_array_length(record_ids)"
    )


_PG_INSERT_SQL = _pg_insert_sql()


def _raw_text(value: Any) -> str:
    # orjson: ~10x faster than json.dumps for the record wire, the hottest call of ingest.
    return orjson.dumps(value).decode()


# Positions in a row of INGEST_COLUMNS whose value PostgreSQL takes in another form.
_PG_LISTS = tuple(i for i, f in enumerate(INGESTED_FIELDS) if f.kind == Kind.TEXT_LIST)
_PG_JSON = tuple(i for i, f in enumerate(INGESTED_FIELDS) if f.kind == Kind.JSON)
_TIMESTAMP = INGEST_COLUMNS.index("timestamp")


def _pg_values(row: RecordRow, now: dt.datetime) -> list[Any]:
    """A row's INGEST_COLUMNS as PostgreSQL takes them (COPY and the array-unnest INSERT
    alike); a record without a timestamp gets the received time."""
    values = list(map(row.__getitem__, INGEST_COLUMNS))
    for index in _PG_LISTS:
        values[index] = pg_array_literal(values[index])
    for index in _PG_JSON:
        values[index] = _raw_text(values[index])
    if values[_TIMESTAMP] is None:
        values[_TIMESTAMP] = now
    return values


def _pg_arrays(rows: list[RecordRow], now: dt.datetime) -> list[list[Any]]:
    values = [_pg_values(row, now) for row in rows]
    return [[row[index] for row in values] for index in range(len(INGEST_COLUMNS))]


@functools.cache
def _pg_id_sequence() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence('audit_interceptionrecord', 'id')")
        found = cursor.fetchone()
    assert found is not None and found[0]
    return str(found[0])


_PG_COPY_SQL = copy_sql("audit_interceptionrecord")


def _pg_start(cursor: Any, sql: str, **params: Any) -> tuple[Any, ...]:
    """Run a batch's first statement (`_PG_COPY_START_SQL` or `_PG_INSERT_START_SQL`)
    and return its columns after the two timeouts."""
    timeouts = {
        "lock": str(settings.CONSOLE_RECORD_INGEST_LOCK_TIMEOUT_MS),
        "statement": str(settings.CONSOLE_RECORD_INGEST_STATEMENT_TIMEOUT_MS),
    }
    cursor.execute(sql, {**timeouts, **params})
    found = cursor.fetchone()
    assert found is not None
    return tuple(found[2:])


def _pg_copy(cursor: Any, agent: Agent, items: list[ValidItem], now: dt.datetime) -> int:
    """COPY the (already de-duplicated) items with ids allocated and queued for sealing by
    the first statement, in PostgreSQL's binary format (`audit.record_copy`)."""
    sequence = _pg_id_sequence()
    opted_in, ids = _pg_start(
        cursor, _PG_COPY_START_SQL, sequence=sequence, count=len(items), agent=agent.pk, now=now
    )
    strip_unopted_reasons(items, lambda: opted_in)
    with cursor.copy(_PG_COPY_SQL) as copy:
        write_rows(copy, ids, agent.pk, now, items)
    return len(ids)


def _pg_insert(cursor: Any, agent: Agent, items: list[ValidItem], now: dt.datetime) -> int:
    """INSERT … ON CONFLICT DO NOTHING: stores what is new, queues it for sealing."""
    (opted_in,) = _pg_start(cursor, _PG_INSERT_START_SQL, agent=agent.pk)
    strip_unopted_reasons(items, lambda: opted_in)
    rows = [item.row() for item in items]
    cursor.execute(_PG_INSERT_SQL, [*_pg_arrays(rows, now), agent.pk, now, agent.pk, now])
    found = cursor.fetchone()
    return int(found[0]) if found else 0


def _store_postgresql(
    agent: Agent, items: list[ValidItem], now: dt.datetime, *, replay: bool
) -> int:
    """One transaction: drop replays of untimed records, then COPY the batch
    (PostgreSQL's fastest write path) or, for a `replay` (see records_ingest), INSERT it."""
    items = untimed_replays_dropped(agent.pk, items)
    if not items:
        return 0
    raw_connection = connection.connection
    assert raw_connection is not None
    # A server-side-binding cursor: the column arrays travel as binary parameters.
    with psycopg.Cursor(raw_connection) as cursor:
        return (_pg_insert if replay else _pg_copy)(cursor, agent, items, now)


def _store_portable(agent: Agent, items: list[ValidItem], now: dt.datetime) -> int:
    strip_unopted_reasons(items, lambda: reason_hook_keys(agent))
    sessions = {session for session, _sequence in (item.key for item in items)}
    existing = set(
        InterceptionRecord.objects.filter(agent=agent, session_id__in=sessions).values_list(
            "session_id", "sequence"
        )
    )
    fresh = [item.row() for item in items if item.key not in existing]
    if not fresh:
        return 0
    created = InterceptionRecord.objects.bulk_create(
        [
            InterceptionRecord(
                agent=agent, received_at=now, **{**row, "timestamp": row["timestamp"] or now}
            )
            for row in fresh
        ]
    )
    RecordSealPending.objects.create(
        agent=agent, record_ids=sorted(obj.pk for obj in created), created_at=now
    )
    return len(created)


def _stored(agent: Agent, batch: list[ValidItem], now: dt.datetime, *, replay: bool) -> int:
    """One attempt at the batch, in its own transaction; sealing scheduled on its commit."""
    with transaction.atomic():
        if embedded.database_is_postgresql():
            accepted = _store_postgresql(agent, batch, now, replay=replay)
        else:
            accepted = _store_portable(agent, batch, now)
        if accepted:
            transaction.on_commit(lambda: chain_schedule_seal(agent.pk), robust=True)
    return accepted


def records_ingest(*, actor: Actor | None, agent: Agent, items: list[ValidItem]) -> IngestResult:
    """Store a validated batch (`audit.ingest.batch_items`) for `agent` (always the
    token's agent, never the body's), all or nothing; duplicates of (agent, session_id,
    sequence) are counted, not stored. Returns after commit. Sealing is scheduled on
    commit. Raises Unavailable when the database can't take the batch (down, locked,
    overloaded): nothing stored. Payload-free: the messages of hooks an admin did not opt
    in to "record its reason" are stripped inside the write's transaction
    (`strip_unopted_reasons`, docs/audit-storage.md)."""
    unique: dict[tuple[str, int], ValidItem] = {}
    for item in items:
        unique.setdefault(item.key, item)
    batch = list(unique.values())
    now = timezone.now()
    try:
        try:
            accepted = _stored(agent, batch, now, replay=False)
        except psycopg.errors.UniqueViolation:
            # A key of the batch is already stored (a replay, or a concurrent request
            # with the same records): the COPY's transaction is rolled back whole and
            # the batch goes again through INSERT … ON CONFLICT DO NOTHING, which stores
            # the rest and counts the duplicates.
            accepted = _stored(agent, batch, now, replay=True)
    except (OperationalError, InterfaceError, psycopg.OperationalError) as exc:
        raise Unavailable(str(exc).strip().splitlines()[0][:200]) from exc
    return IngestResult(accepted=accepted, duplicates=len(items) - accepted)


@transaction.atomic
def dead_letters_report(
    *, actor: Actor | None, agent: Agent, reports: list[DeadLetterRow]
) -> IngestResult:
    """Store the agent's reports of record batches the console refused (validated by
    `audit.dead_letters.report_rows`); a batch already reported is counted as a duplicate.
    The governance event names how many records the agent could not deliver."""
    # One reporter of an agent at a time: the duplicate check below then holds.
    Agent.objects.select_for_update().filter(pk=agent.pk).values_list("pk").get()
    batches = {report.batch for report in reports}
    known = set(
        DeadLetterReport.objects.filter(agent=agent, batch__in=batches).values_list(
            "batch", flat=True
        )
    )
    fresh: dict[str, DeadLetterRow] = {}
    for report in reports:
        if report.batch not in known:
            fresh.setdefault(report.batch, report)
    if fresh:
        now = timezone.now()
        DeadLetterReport.objects.bulk_create(
            [
                DeadLetterReport(
                    agent=agent,
                    batch=report.batch,
                    records=report.records,
                    status=report.status,
                    error=report.error,
                    refused_at=report.refused_at,
                    reported_at=now,
                )
                for report in fresh.values()
            ]
        )
        count = sum(report.records for report in fresh.values())
        last = max(fresh.values(), key=lambda report: report.refused_at)
        governance_event_record(
            actor=actor,
            action=GovernanceAction.RECORDS_DEAD_LETTERED,
            summary=f"{agent.slug} kept {count} record{'' if count == 1 else 's'} the console refused "
            f"({last.status}: {last.error})",
            agent=agent,
            after={
                "records": count,
                "batches": sorted(fresh),
                "last_status": last.status,
                "last_error": last.error,
            },
        )
    return IngestResult(accepted=len(fresh), duplicates=len(reports) - len(fresh))


@transaction.atomic
def records_export_record(
    *, actor: Actor | None, filters: dict[str, str], fmt: str, summary: str
) -> RecordExport:
    """One export about to stream: its RecordExport row (the manifest comes at the end)
    and its governance event, both written before the first byte."""
    export = RecordExport.objects.create(
        actor=actor_user(actor),
        actor_label=actor_label(actor),
        format=fmt,
        filter=filters,
        generated_at=timezone.now(),
    )
    governance_event_record(
        actor=actor,
        action=GovernanceAction.RECORDS_EXPORTED,
        summary=f"Exported records as {fmt}: {summary}",
        target=export,
        after={"filter": filters, "format": fmt},
    )
    return export


@transaction.atomic
def governance_events_export_record(
    *, actor: Actor | None, filters: dict[str, str], fmt: str, summary: str
) -> GovernanceEvent:
    """The governance event of a governance-events export, written before the first byte."""
    return governance_event_record(
        actor=actor,
        action=GovernanceAction.GOVERNANCE_EVENTS_EXPORTED,
        summary=f"Exported governance events as {fmt}: {summary}",
        after={"filter": filters, "format": fmt},
    )


def records_export_complete(*, export_id: Any, rows: int, size: int, sha256: str) -> None:
    """The manifest of an export whose stream has produced every byte, written before the
    last piece is sent. Bookkeeping of the export the governance event already names, so
    no second event; written once (a conditional update)."""
    RecordExport.objects.filter(pk=export_id, completed_at__isnull=True).update(
        completed_at=timezone.now(), rows=rows, size=size, sha256=sha256
    )
