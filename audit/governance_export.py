"""Streamed export of governance events (CSV or JSON Lines), the files auditors take away
next to the record export.

The rows are exactly the events the governance events search shows for the same filter
(`audit.governance_selectors.governance_events_filter`), oldest first, fetched in keyset chunks so
memory stays flat. The files follow the record export's rules (`audit.export`): CSV per
RFC 4180 (the column header, then one event per CRLF row) with every text cell
formula-safe (`formula_safe`: a leading `'` before =, +, -, @, tab, CR or `'`), and JSON
Lines with one raw object of the same shape per line. before, after and changes are JSON
in a CSV cell. Events carry no secret (token plaintext is never written to the log).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Q, QuerySet

from audit.export import formula_safe, iso
from audit.models import ExportFormat
from console.governance.models import GovernanceEvent

COLUMNS: tuple[str, ...] = (
    "id",
    "at",
    "action",
    "actor",
    "agent",
    "object_type",
    "object_id",
    "summary",
    "request_id",
    "before",
    "after",
    "changes",
)
JSON_COLUMNS = frozenset({"before", "after", "changes"})
ROWS_PER_FETCH = 1000
Cursor = tuple[Any, int] | None


def event_as_dict(event: GovernanceEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "at": iso(event.at),
        "action": event.action,
        "actor": event.actor_label,
        "agent": event.agent_slug or None,
        "object_type": event.object_type or None,
        "object_id": event.object_id or None,
        "summary": event.summary,
        "request_id": event.request_id,
        "before": event.before,
        "after": event.after,
        "changes": event.changes,
    }


def csv_cells(item: dict[str, Any]) -> list[Any]:
    """One CSV row: JSON columns as JSON text, nulls empty, every text cell formula-safe."""
    cells: list[Any] = []
    for name in COLUMNS:
        value = item[name]
        if name in JSON_COLUMNS:
            value = "" if value is None else json.dumps(value, ensure_ascii=False)
        if isinstance(value, str):
            value = formula_safe(value)
        cells.append(value)
    return cells


def header_bytes(fmt: str) -> bytes:
    if fmt != ExportFormat.CSV:
        return b""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(COLUMNS)
    return buffer.getvalue().encode()


def _chunk(qs: QuerySet[GovernanceEvent], fmt: str, after: Cursor) -> tuple[bytes, Cursor]:
    """The next ROWS_PER_FETCH events after `after` (oldest first), formatted, and the
    cursor past them; (b"", None) at the end."""
    page = qs.order_by("at", "id")
    if after is not None:
        page = page.filter(Q(at__gt=after[0]) | Q(at=after[0], id__gt=after[1]))
    rows = list(page[:ROWS_PER_FETCH])
    if not rows:
        return b"", None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    for event in rows:
        item = event_as_dict(event)
        if fmt == ExportFormat.CSV:
            writer.writerow(csv_cells(item))
        else:
            buffer.write(json.dumps(item, ensure_ascii=False) + "\n")
    return buffer.getvalue().encode(), (rows[-1].at, rows[-1].pk)


def stream(qs: QuerySet[GovernanceEvent], fmt: str) -> Iterator[bytes]:
    """Sync stream (WSGI, tests)."""
    if header := header_bytes(fmt):
        yield header
    cursor: Cursor = None
    while True:
        piece, cursor = _chunk(qs, fmt, cursor)
        if cursor is None:
            return
        yield piece


async def astream(qs: QuerySet[GovernanceEvent], fmt: str) -> AsyncIterator[bytes]:
    """Async stream (ASGI): Django would otherwise read a sync iterator whole first."""
    if header := header_bytes(fmt):
        yield header
    cursor: Cursor = None
    while True:
        piece, cursor = await sync_to_async(_chunk)(qs, fmt, cursor)
        if cursor is None:
            return
        yield piece
