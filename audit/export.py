"""Streamed record export (CSV or JSON Lines) with constant memory.

On PostgreSQL the filtered query (built by `audit.selectors.records_filter`, so it means
exactly what the search means) runs as `COPY (SELECT …) TO STDOUT` and the server's own
CSV/JSON output is streamed through in ~256 KB chunks: nothing is materialised, in
Python or in the database. Under ASGI the stream uses its own async psycopg connection
(Django would otherwise buffer a sync iterator whole); under WSGI it uses Django's
connection. Elsewhere (SQLite) rows are fetched in keyset chunks and formatted in Python.

Every row carries the tamper-evidence fields chain_seq, chain_prev and chain_hash
(empty until the record is sealed) next to every hashed field, so the chain can be
re-checked from the file alone (see audit.chain). The first line names the filter and
the export time.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
from django.db import connection
from django.db.models import CharField, F, Func, Q, QuerySet, TextField, Value
from django.db.models.functions import Cast

from audit.models import InterceptionRecord

FORMATS = ("csv", "jsonl")
CHUNK_BYTES = 256 * 1024
ROWS_PER_FETCH = 2000

COLUMNS: tuple[str, ...] = (
    "id",
    "timestamp",
    "received_at",
    "agent",
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
    "hook_ids",
    "tool_name",
    "framework",
    "revision",
    "chain_seq",
    "chain_prev",
    "chain_hash",
    "record",
)
# Model lookups behind each column (for the Python path and the COPY path alike).
_SOURCES: dict[str, str] = {
    "agent": "agent__slug",
    "chain_seq": "seal__chain_seq",
    "chain_prev": "seal__chain_prev",
    "chain_hash": "seal__chain_hash",
    "record": "raw",
}


def iso(value: dt.datetime | None) -> str | None:
    """The one timestamp format of the API and exports: UTC, microseconds, `Z`."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record_as_dict(record: InterceptionRecord) -> dict[str, Any]:
    """A record as the search API and JSONL export show it (`seal` and `agent` joined)."""
    seal = getattr(record, "seal", None)
    return {
        "id": record.pk,
        "timestamp": iso(record.timestamp),
        "received_at": iso(record.received_at),
        "agent": record.agent.slug,
        "custom_agent": record.custom_agent,
        "session_id": record.session_id,
        "sequence": record.sequence,
        "interception_point": record.interception_point,
        "mode": record.mode,
        "decision": record.decision,
        "outcome": record.outcome,
        "reason": record.reason,
        "resolved_by": record.resolved_by,
        "decided_by": record.decided_by,
        "decided_hook": record.decided_hook,
        "fold_truncated": record.fold_truncated,
        "input_identity": record.input_identity,
        "enforced_identity": record.enforced_identity,
        "hook_ids": list(record.hook_ids),
        "tool_name": record.tool_name,
        "framework": record.framework,
        "revision": record.revision,
        "chain_seq": seal.chain_seq if seal else None,
        "chain_prev": seal.chain_prev if seal else None,
        "chain_hash": seal.chain_hash if seal else None,
        "record": record.raw,
    }


def csv_cells(item: dict[str, Any]) -> list[Any]:
    """One CSV row from a `record_as_dict` item: JSON for lists/objects, true/false."""
    cells: list[Any] = []
    for name in COLUMNS:
        value = item[name]
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list | dict):
            value = json.dumps(value, ensure_ascii=False)
        cells.append(value)
    return cells


def header_line(fmt: str, *, filters: dict[str, str], described: str, at: dt.datetime) -> bytes:
    if fmt == "csv":
        first = f"# console records export; filter: {described}; exported_at: {iso(at)}\n"
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(COLUMNS)
        return (first + buffer.getvalue()).encode()
    meta = {"export": {"filter": filters, "described": described, "exported_at": iso(at)}}
    return (json.dumps(meta) + "\n").encode()


class _UtcIso(Func):
    template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    output_field = CharField()


def _copy_select(qs: QuerySet[InterceptionRecord], fmt: str) -> tuple[str, list[Any]]:
    """SQL + params of the SELECT whose COPY output is the export body."""
    text = TextField()
    query: QuerySet[Any, Any]
    exprs: dict[str, Any] = {}
    for name in COLUMNS:
        source = _SOURCES.get(name, name)
        if name in ("timestamp", "received_at"):
            exprs[name] = _UtcIso(F(source))
        elif fmt == "csv" and name == "hook_ids":
            exprs[name] = Func(F(source), function="to_json", output_field=text)
        elif fmt == "csv" and name == "fold_truncated":
            exprs[name] = Cast(F(source), output_field=text)
        else:
            exprs[name] = F(source)
    if fmt == "jsonl":
        pairs: list[Any] = []
        for name in COLUMNS:
            pairs += [Value(name), exprs[name]]
        annotated = qs.annotate(line=Func(*pairs, function="json_build_object", output_field=text))
        query = annotated.values_list("line")
    else:
        aliased = {f"x_{name}": expr for name, expr in exprs.items()}
        query = qs.annotate(**aliased).values_list(*aliased)
    sql, params = query.order_by("timestamp", "id").query.sql_with_params()
    return sql, list(params)


def _copy_statement(qs: QuerySet[InterceptionRecord], fmt: str, raw_conn: Any) -> str:
    sql, params = _copy_select(qs, fmt)
    # COPY takes no bind parameters: psycopg quotes the values into the text.
    select = psycopg.ClientCursor(raw_conn).mogrify(sql, params)
    if fmt == "csv":
        return f"COPY ({select}) TO STDOUT WITH (FORMAT csv)"
    # One JSON document per line; csv mode with control-character quote/delimiter writes
    # the text verbatim (PostgreSQL's JSON output escapes every control character).
    return f"COPY ({select}) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')"


def trailer_line(fmt: str, rows: int) -> bytes:
    """Last line: the row count, so a truncated download is detectable."""
    if fmt == "csv":
        return f"# end of export: {rows} rows\n".encode()
    return (json.dumps({"export_end": {"rows": rows}}) + "\n").encode()


class _Chunker:
    """Gathers COPY's small blocks into CHUNK_BYTES pieces (sync and async streams alike)."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def add(self, block: bytes | bytearray | memoryview) -> bytes | None:
        self.buffer += block
        if len(self.buffer) < CHUNK_BYTES:
            return None
        piece = bytes(self.buffer)
        self.buffer.clear()
        return piece

    def rest(self) -> bytes | None:
        return bytes(self.buffer) if self.buffer else None


def _chunked(blocks: Iterator[bytes]) -> Iterator[bytes]:
    chunker = _Chunker()
    for block in blocks:
        if (piece := chunker.add(block)) is not None:
            yield piece
    if (rest := chunker.rest()) is not None:
        yield rest


def stream_copy(qs: QuerySet[InterceptionRecord], fmt: str, header: bytes) -> Iterator[bytes]:
    """Sync stream through Django's own connection (WSGI, tests, management commands)."""
    yield header
    connection.ensure_connection()
    raw_conn = connection.connection
    statement = _copy_statement(qs, fmt, raw_conn)
    with raw_conn.cursor() as cursor:
        with cursor.copy(statement) as copy:
            yield from _chunked(bytes(block) for block in copy)
        rows = cursor.rowcount
    yield trailer_line(fmt, rows)


def _conninfo() -> dict[str, Any]:
    settings_dict = connection.settings_dict
    info = {
        "dbname": settings_dict["NAME"],
        "user": settings_dict.get("USER") or None,
        "password": settings_dict.get("PASSWORD") or None,
        "host": settings_dict.get("HOST") or None,
        "port": settings_dict.get("PORT") or None,
    }
    return {key: value for key, value in info.items() if value is not None}


async def astream_copy(statement: str, fmt: str, header: bytes) -> AsyncIterator[bytes]:
    """Async stream on a dedicated connection (ASGI): nothing is buffered in Django."""
    yield header
    async with await psycopg.AsyncConnection.connect(**_conninfo(), autocommit=True) as conn:
        async with conn.cursor() as cursor:
            async with cursor.copy(statement) as copy:
                chunker = _Chunker()
                async for block in copy:
                    if (piece := chunker.add(block)) is not None:
                        yield piece
                if (rest := chunker.rest()) is not None:
                    yield rest
            rows = cursor.rowcount
    yield trailer_line(fmt, rows)


def copy_statement_for_async(qs: QuerySet[InterceptionRecord], fmt: str) -> str:
    connection.ensure_connection()
    return _copy_statement(qs, fmt, connection.connection)


def stream_python(qs: QuerySet[InterceptionRecord], fmt: str, header: bytes) -> Iterator[bytes]:
    """Portable stream: keyset chunks of ROWS_PER_FETCH rows, formatted here."""
    yield header
    base = qs.select_related("agent", "seal").order_by("timestamp", "id")
    last: tuple[dt.datetime, int] | None = None
    count = 0
    while True:
        page = base
        if last is not None:
            page = base.filter(Q(timestamp__gt=last[0]) | Q(timestamp=last[0], id__gt=last[1]))
        rows = list(page.order_by("timestamp", "id")[:ROWS_PER_FETCH])
        if not rows:
            yield trailer_line(fmt, count)
            return
        count += len(rows)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for record in rows:
            item = record_as_dict(record)
            if fmt == "csv":
                writer.writerow(csv_cells(item))
            else:
                buffer.write(json.dumps(item, ensure_ascii=False) + "\n")
        yield buffer.getvalue().encode()
        last = (rows[-1].timestamp, rows[-1].pk)
