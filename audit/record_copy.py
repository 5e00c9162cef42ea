"""Record rows for PostgreSQL's binary `COPY … FROM STDIN`, written by psycopg's row formatter.

Each column's PostgreSQL type is fixed once from its kind (`audit.record_fields`), so
psycopg's binary formatter (C, from psycopg-binary) writes a row without looking a dumper up
per value, and PostgreSQL reads each value with its type's receive function instead of
parsing text (timestamps, integers and `text[]` literals above all). This replaced a
hand-written text COPY formatter (`docs/benchmarks.md`, eighteenth pass of issue 14).

Also here: `pg_array_literal`, the `text[]` literal the array-unnest INSERT of a replayed
batch passes as text.
"""

from __future__ import annotations

import datetime as dt

import orjson
from psycopg import Copy
from psycopg.types.json import set_json_dumps

from audit.record_fields import INGEST_COLUMNS, INGESTED_FIELDS, Kind
from audit.record_rows import ValidItem

_PG_TYPES: dict[Kind, str] = {
    Kind.BIGINT: "int8",
    Kind.INTEGER: "int4",
    Kind.TEXT: "text",
    Kind.BOOLEAN: "bool",
    Kind.DATETIME: "timestamptz",
    Kind.TEXT_LIST: "text[]",
    Kind.JSON: "jsonb",
}
COPY_COLUMNS: tuple[str, ...] = ("id", "agent_id", "received_at", *INGEST_COLUMNS)
COPY_TYPES: tuple[str, ...] = (
    "int8",
    "int8",
    "timestamptz",
    *(_PG_TYPES[field.kind] for field in INGESTED_FIELDS),
)
_TIMESTAMP = COPY_COLUMNS.index("timestamp")


def pg_array_literal(items: list[str]) -> str:
    """A text[] literal: every item quoted, so none reads as NULL or splits at a comma."""
    quoted = ('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"' for item in items)
    return "{" + ",".join(quoted) + "}"


def copy_sql(table: str) -> str:
    return f"COPY {table} ({', '.join(COPY_COLUMNS)}) FROM STDIN (FORMAT BINARY)"


def write_rows(
    copy: Copy, ids: list[int], agent_id: int, now: dt.datetime, items: list[ValidItem]
) -> None:
    """Write `items` (columns COPY_COLUMNS) with ids `ids`, for `agent_id`, received `now`;
    a record without a timestamp gets `now`. The items' stored columns are derived here,
    row by row, while PostgreSQL inserts what psycopg has sent (every 32 KiB)."""
    # `raw` (jsonb) dumped by orjson rather than psycopg's default, the stdlib's json.
    set_json_dumps(orjson.dumps, context=copy.cursor)
    copy.set_types(COPY_TYPES)
    for pk, item in zip(ids, items, strict=True):
        # A row's keys are INGEST_COLUMNS in order (tests/audit/test_record_copy.py).
        values = [pk, agent_id, now, *item.row().values()]
        if values[_TIMESTAMP] is None:
            values[_TIMESTAMP] = now
        copy.write_row(values)
