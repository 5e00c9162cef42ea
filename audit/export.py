"""Streamed record export (CSV or JSON Lines) with constant memory.

On PostgreSQL the filtered query (built by `audit.selectors.records_search`, so it means
exactly what the search means and reads the same database: the read replica when one is
configured) runs as `COPY (SELECT …) TO STDOUT` and the server's own
CSV/JSON output is streamed through in ~256 KB chunks: nothing is materialised, in
Python or in the database. Under ASGI the stream uses its own async psycopg connection
(Django would otherwise buffer a sync iterator whole); under WSGI it uses Django's
connection. Elsewhere (SQLite) rows are fetched in keyset chunks and formatted in Python,
in Django's sync thread under ASGI as well.

The files are standard: CSV per RFC 4180 (the column header, then one record per row,
CRLF line ends, a field quoted when it holds a comma, quote, CR or LF) and JSON Lines
(one object of the same shape per line). Nothing else is in the body: the filter and the
generation time travel in response headers (audit.api), and the manifest (rows, size,
SHA-256 of exactly the bytes sent) is handed to `finish` before the last piece leaves,
for the manifest endpoint. In CSV a text cell that starts with `=`, `+`, `-`, `@`, tab
or CR gets a leading `'`, so a spreadsheet shows it instead of running it as a formula
(OWASP CSV injection); so does one that starts with `'`, which makes the rule reversible
(drop one leading `'`). Every other cell is written unchanged; JSON Lines is raw.

Every row carries the tamper-evidence fields chain_seq, chain_prev and chain_hash
(empty until the record is sealed) next to every hashed field, so the chain can be
re-checked from the file alone (see audit.chain; `record`, a JSON object, is never
prefixed).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import operator
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, overload

import psycopg
from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import CharField, F, Func, Q, QuerySet, TextField, Value
from django.db.models.functions import Cast

from audit.models import ExportFormat, InterceptionRecord
from audit.record_fields import EXPORT_COLUMNS, RECORD_FIELDS, TEXT_COLUMNS, Kind, RecordField

FORMATS: tuple[str, ...] = tuple(ExportFormat.values)
MEDIA_TYPES: dict[str, str] = {
    ExportFormat.CSV: "text/csv; charset=utf-8; header=present",
    ExportFormat.JSONL: "application/x-ndjson",
}
CHUNK_BYTES = 256 * 1024
ROWS_PER_FETCH = 2000

# The fields of audit.record_fields, in its order; TEXT_COLUMNS are formula-safe in CSV.
COLUMNS: tuple[str, ...] = EXPORT_COLUMNS
# A leading `'` is prefixed too, so the rule reverses exactly: drop one leading `'`.
PREFIXED_STARTS = "=+-@\t\r'"


@overload
def iso(value: dt.datetime) -> str: ...
@overload
def iso(value: None) -> None: ...
@overload
def iso(value: dt.datetime | None) -> str | None: ...
def iso(value: dt.datetime | None) -> str | None:
    """The one timestamp format of the API and exports: UTC, microseconds, `Z`."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _getter(field: RecordField) -> Callable[[InterceptionRecord], Any]:
    """How `record_as_dict` reads one field from a record (its `seal` and `agent` joined)."""
    if field.column is None:  # joined through a relation that is absent until sealed
        relation, name = field.source.split("__")
        return lambda record: getattr(getattr(record, relation, None), name, None)
    get = operator.attrgetter(field.source.replace("__", "."))
    if field.kind == Kind.DATETIME:
        return lambda record: iso(get(record))
    if field.kind == Kind.TEXT_LIST:
        return lambda record: list(get(record))
    return get


_GETTERS = tuple((field.name, _getter(field)) for field in RECORD_FIELDS)


def record_as_dict(record: InterceptionRecord) -> dict[str, Any]:
    """A record as the search API and JSONL export show it (`seal` and `agent` joined)."""
    return {name: get(record) for name, get in _GETTERS}


def formula_safe(value: str) -> str:
    """A CSV text cell as a spreadsheet may open it: `'` before a leading =, +, -, @,
    tab or CR (OWASP CSV injection guidance) or `'`; any other value unchanged."""
    return "'" + value if value and value[0] in PREFIXED_STARTS else value


def csv_cells(item: dict[str, Any]) -> list[Any]:
    """One CSV row from a `record_as_dict` item: JSON for lists/objects, true/false, and
    formula-safe text cells."""
    cells: list[Any] = []
    for name in COLUMNS:
        value = item[name]
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list | dict):
            value = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, str) and name in TEXT_COLUMNS:
            value = formula_safe(value)
        cells.append(value)
    return cells


def _csv_writer(buffer: io.StringIO) -> Any:
    return csv.writer(buffer, lineterminator="\r\n")


def header_bytes(fmt: str) -> bytes:
    """What precedes the rows: the CSV column header line; nothing for JSON Lines."""
    if fmt != ExportFormat.CSV:
        return b""
    buffer = io.StringIO()
    _csv_writer(buffer).writerow(COLUMNS)
    return buffer.getvalue().encode()


class _UtcIso(Func):
    template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    output_field = CharField()


class _FormulaSafe(Func):
    """`formula_safe` in SQL: ascii() of the first character is one of = + - @ tab CR '."""

    output_field = TextField()

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, tuple[Any, ...]]:
        sql, params = compiler.compile(self.source_expressions[0])
        quote = "''''"  # the SQL literal of one single quote
        case = f"CASE WHEN ascii({sql}) IN (61, 43, 45, 64, 9, 13, 39) THEN {quote} || {sql}"
        return f"{case} ELSE {sql} END", (*params, *params, *params)


def _copy_select(qs: QuerySet[InterceptionRecord], fmt: str) -> tuple[str, list[Any]]:
    """SQL + params of the SELECT whose COPY output is the export body."""
    text = TextField()
    query: QuerySet[Any, Any]
    exprs: dict[str, Any] = {}
    for field in RECORD_FIELDS:
        source = F(field.source)
        if field.kind == Kind.DATETIME:
            exprs[field.name] = _UtcIso(source)
        elif fmt == "csv" and field.kind == Kind.TEXT_LIST:
            exprs[field.name] = Func(source, function="to_json", output_field=text)
        elif fmt == "csv" and field.kind == Kind.BOOLEAN:
            exprs[field.name] = Cast(source, output_field=text)
        elif fmt == "csv" and field.is_text:
            exprs[field.name] = _FormulaSafe(source)
        else:
            exprs[field.name] = source
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


def copy_statement(qs: QuerySet[InterceptionRecord], fmt: str, raw_conn: Any = None) -> str:
    """The `COPY … TO STDOUT` of an export, compiled now (a bad filter fails before any
    byte is sent). `raw_conn` (a psycopg connection) quotes the values; Django's connection
    to the database `qs` reads if None."""
    if raw_conn is None:
        connection = connections[qs.db]
        connection.ensure_connection()
        raw_conn = connection.connection
    sql, params = _copy_select(qs, fmt)
    # COPY takes no bind parameters: psycopg quotes the values into the text.
    select = psycopg.ClientCursor(raw_conn).mogrify(sql, params)
    if fmt == "csv":
        return f"COPY ({select}) TO STDOUT WITH (FORMAT csv)"
    # One JSON document per line; csv mode with control-character quote/delimiter writes
    # the text verbatim (PostgreSQL's JSON output escapes every control character).
    return f"COPY ({select}) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')"


@dataclass(frozen=True)
class Manifest:
    """What a complete download holds: `rows` records in `size` bytes hashing to `sha256`."""

    rows: int
    size: int
    sha256: str


class _Pieces:
    """The bytes of one export on their way out: gathered into CHUNK_BYTES pieces (sync
    and async streams alike), counted and hashed exactly as sent.

    COPY ends each CSV row with LF; RFC 4180 ends rows with CRLF. PostgreSQL sends
    exactly one row per CopyData message ("always one per row", protocol docs), so a
    piece of `lines` whole rows holds `lines` row-ending LFs: when it holds no other LF
    one `replace` makes them CRLF (the fast path); when a quoted field holds a line
    break, only the LFs outside quotes become CRLF, so values stay unchanged."""

    def __init__(self, header: bytes, *, copy_rows: bool) -> None:
        self.copy_rows = copy_rows
        self.buffer = bytearray(header.replace(b"\r\n", b"\n") if copy_rows else header)
        self.lines = 1 if copy_rows and header else 0  # LF-ended lines in the buffer
        self.digest = hashlib.sha256()
        self.size = 0

    def add(self, block: bytes | bytearray | memoryview) -> bytes | None:
        """A piece to send, or None. The newest block always stays behind, so the last
        piece (sent after `finish`) is never empty when there was a row."""
        piece = self._take() if len(self.buffer) >= CHUNK_BYTES else None
        self.buffer += block
        self.lines += 1
        return piece

    def last(self, rows: int) -> tuple[bytes, Manifest]:
        """The remaining bytes, and the manifest of the whole export (them included)."""
        piece = self._take()
        return piece, Manifest(rows=rows, size=self.size, sha256=self.digest.hexdigest())

    def _take(self) -> bytes:
        piece = bytes(self.buffer)
        self.buffer.clear()
        if self.copy_rows:
            piece = _crlf_rows(piece, self.lines)
            self.lines = 0
        self.digest.update(piece)
        self.size += len(piece)
        return piece


def _crlf_rows(rows: bytes, lines: int) -> bytes:
    """`lines` whole LF-ended CSV lines with CRLF row ends; LFs inside quotes kept."""
    converted = rows.replace(b"\n", b"\r\n")
    if len(converted) - len(rows) == lines:
        return converted
    out = bytearray()
    quoted = False
    parts = rows.split(b"\n")
    for index, part in enumerate(parts):
        out += part
        if part.count(b'"') % 2:
            quoted = not quoted
        if index < len(parts) - 1:
            out += b"\n" if quoted else b"\r\n"
    return bytes(out)


def stream_copy(
    statement: str,
    fmt: str,
    finish: Callable[[Manifest], None],
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> Iterator[bytes]:
    """Sync stream through Django's own connection to database `using` (WSGI, tests,
    management commands). `finish(manifest)` runs once every byte is produced, before the
    last piece is sent.

    A client that goes away mid-COPY closes this generator, and psycopg cancels the
    statement: inside a transaction (an atomic block, a test) the cancel would leave it
    aborted, so there the COPY runs under a savepoint that is rolled back."""
    pieces = _Pieces(header_bytes(fmt), copy_rows=fmt == ExportFormat.CSV)
    connection = connections[using]
    connection.ensure_connection()
    savepoint = connection.savepoint()  # None in autocommit
    try:
        with connection.connection.cursor() as cursor:
            with cursor.copy(statement) as copy:
                for block in copy:
                    if (piece := pieces.add(block)) is not None:
                        yield piece
            rows = cursor.rowcount
    except BaseException:
        if savepoint:
            connection.savepoint_rollback(savepoint)
        raise
    if savepoint:
        connection.savepoint_commit(savepoint)
    last, manifest = pieces.last(rows)
    finish(manifest)
    if last:
        yield last


# Django's own OPTIONS, not psycopg connection parameters.
_DJANGO_OPTIONS = frozenset({"pool", "isolation_level", "server_side_binding", "assume_role"})


def _conninfo(using: str = DEFAULT_DB_ALIAS) -> dict[str, Any]:
    """psycopg connection parameters of database `using`: its address and the psycopg
    parameters among its OPTIONS (e.g. sslmode from the URL)."""
    settings_dict = connections[using].settings_dict
    info = {
        "dbname": settings_dict["NAME"],
        "user": settings_dict.get("USER") or None,
        "password": settings_dict.get("PASSWORD") or None,
        "host": settings_dict.get("HOST") or None,
        "port": settings_dict.get("PORT") or None,
    }
    conninfo = {key: value for key, value in info.items() if value is not None}
    options = settings_dict.get("OPTIONS") or {}
    conninfo.update({key: value for key, value in options.items() if key not in _DJANGO_OPTIONS})
    return conninfo


async def astream_copy(
    statement: str,
    fmt: str,
    finish: Callable[[Manifest], Awaitable[None]],
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> AsyncIterator[bytes]:
    """Async stream on a dedicated autocommit connection to database `using` (ASGI): nothing
    is buffered in Django. The COPY is one statement, so one transaction: behind a
    transaction pooler it holds one server session for exactly the export's duration."""
    pieces = _Pieces(header_bytes(fmt), copy_rows=fmt == ExportFormat.CSV)
    conninfo = _conninfo(using)
    async with await psycopg.AsyncConnection.connect(**conninfo, autocommit=True) as conn:
        async with conn.cursor() as cursor:
            async with cursor.copy(statement) as copy:
                async for block in copy:
                    if (piece := pieces.add(block)) is not None:
                        yield piece
            rows = cursor.rowcount
    last, manifest = pieces.last(rows)
    await finish(manifest)
    if last:
        yield last


def stream_python(
    qs: QuerySet[InterceptionRecord], fmt: str, finish: Callable[[Manifest], None]
) -> Generator[bytes]:
    """Portable stream: keyset chunks of ROWS_PER_FETCH rows, formatted here."""
    pieces = _Pieces(header_bytes(fmt), copy_rows=False)
    base = qs.select_related("agent", "seal").order_by("timestamp", "id")
    last: tuple[dt.datetime, int] | None = None
    count = 0
    while True:
        page = base
        if last is not None:
            page = base.filter(Q(timestamp__gt=last[0]) | Q(timestamp=last[0], id__gt=last[1]))
        rows = list(page.order_by("timestamp", "id")[:ROWS_PER_FETCH])
        if not rows:
            break
        count += len(rows)
        buffer = io.StringIO()
        writer = _csv_writer(buffer)
        for record in rows:
            item = record_as_dict(record)
            if fmt == ExportFormat.CSV:
                writer.writerow(csv_cells(item))
            else:
                buffer.write(json.dumps(item, ensure_ascii=False) + "\n")
        if (piece := pieces.add(buffer.getvalue().encode())) is not None:
            yield piece
        last = (rows[-1].timestamp, rows[-1].pk)
    rest, manifest = pieces.last(count)
    finish(manifest)
    if rest:
        yield rest


async def astream_python(
    qs: QuerySet[InterceptionRecord], fmt: str, finish: Callable[[Manifest], None]
) -> AsyncIterator[bytes]:
    """The portable stream under ASGI: each piece is produced in Django's sync thread (its
    connection) and handed over as it comes; Django would otherwise consume a sync iterator
    whole before sending the first byte."""
    stream = stream_python(qs, fmt, finish)

    def produce() -> bytes | None:
        return next(stream, None)

    try:
        while (piece := await sync_to_async(produce)()) is not None:
            yield piece
    finally:
        await sync_to_async(stream.close)()
