"""Record rows as PostgreSQL `COPY … FROM STDIN` text, built in one pass per chunk of rows.

Ingest's hottest loop after validation: each value of `audit.record_fields.INGEST_COLUMNS`
is turned straight into COPY text by its kind (psycopg's generic `write_row` looked up a
dumper per value and cost about as much as the validation). The text format: columns
separated by tabs, rows ended by a newline, NULL as `\\N`, and in values a backslash, tab,
newline or carriage return written as `\\\\`, `\\t`, `\\n`, `\\r`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import orjson

from audit.record_fields import INGEST_COLUMNS, INGESTED_FIELDS, Kind
from audit.record_rows import RecordRow

NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_escape(text: str) -> str:
    """`text` as one COPY text value (most values need nothing: checked first)."""
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        return text.translate(_ESCAPES)
    return text


def pg_array_literal(items: list[str]) -> str:
    """A text[] literal: every item quoted, so none reads as NULL or splits at a comma."""
    quoted = ('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"' for item in items)
    return "{" + ",".join(quoted) + "}"


def _integer(value: Any) -> str:
    return NULL if value is None else str(value)


def _boolean(value: Any) -> str:
    return NULL if value is None else ("t" if value else "f")


def _datetime(value: Any) -> str:
    return NULL if value is None else value.isoformat()


def _text_list(value: Any) -> str:
    return copy_escape(pg_array_literal(value))


def _json(value: Any) -> str:
    # orjson writes compact JSON: control characters only as escapes, so no raw tab or
    # newline; only its backslashes need doubling.
    return orjson.dumps(value).decode().replace("\\", "\\\\")


_FORMATS: dict[Kind, Callable[[Any], str]] = {
    Kind.BIGINT: _integer,
    Kind.INTEGER: _integer,
    Kind.TEXT: copy_escape,
    Kind.BOOLEAN: _boolean,
    Kind.DATETIME: _datetime,
    Kind.TEXT_LIST: _text_list,
    Kind.JSON: _json,
}
_COLUMN_FORMATS: tuple[tuple[str, Callable[[Any], str]], ...] = tuple(
    (column, _FORMATS[field.kind])
    for column, field in zip(INGEST_COLUMNS, INGESTED_FIELDS, strict=True)
)
COPY_COLUMNS: tuple[str, ...] = ("id", "agent_id", "received_at", *INGEST_COLUMNS)
_TIMESTAMP = INGEST_COLUMNS.index("timestamp")


def copy_text(ids: list[int], agent_id: int, now: dt.datetime, rows: list[RecordRow]) -> str:
    """The COPY text of `rows` (columns COPY_COLUMNS) with ids `ids`, for `agent_id`,
    received `now`; a row without a timestamp gets `now`."""
    head = f"\t{agent_id}\t{now.isoformat()}\t"
    now_text = now.isoformat()
    lines = []
    for pk, row in zip(ids, rows, strict=True):
        values = [fmt(row[column]) for column, fmt in _COLUMN_FORMATS]
        if row["timestamp"] is None:
            values[_TIMESTAMP] = now_text
        lines.append(f"{pk}{head}{'\t'.join(values)}\n")
    return "".join(lines)
