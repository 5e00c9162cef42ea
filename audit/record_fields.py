"""The interception record's fields, written once.

`RECORD_FIELDS` lists every field a record shows, in the order the search API and the
exports show them: the columns stored on `audit.models.InterceptionRecord` and the joined
ones (the agent's slug, the chain position from `RecordSeal`). Built from it (the column
lists once, at import time, so ingest does no per-record work for them):

- `EXPORT_COLUMNS`, `TEXT_COLUMNS` and the projection of `audit.export` (search API
  items, CSV and JSON Lines, the COPY select);
- `INGEST_COLUMNS`: the columns ingest derives from a posted item, i.e. the keys of
  `audit.record_rows.RecordRow` and the column lists of the COPY and the INSERT of
  `audit.services`;
- the OpenAPI `RecordSerializer` of `audit.openapi`.

The model declares the stored columns for Django and its migrations; tests hold the two
together (tests/audit/test_record_fields.py). The hash chain's field list is deliberately
NOT derived from here: `audit.chain.SEALED_FIELDS` is a literal, because changing it
changes the hash of every sealed record.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from django.db import models

from agents.models import Mode
from audit.models import Decision, InterceptionPoint, Outcome


class Kind(StrEnum):
    """What a field holds; decides its SQL type, its API type and its CSV cell."""

    BIGINT = "bigint"
    INTEGER = "integer"
    TEXT = "text"
    BOOLEAN = "boolean"
    DATETIME = "datetime"
    TEXT_LIST = "text_list"
    JSON = "json"


@dataclass(frozen=True, slots=True)
class RecordField:
    """One field of a record.

    `column` is the attribute stored on InterceptionRecord (None for a joined field) and
    `source` the ORM lookup that reads the field (the column unless joined). `ingested`
    fields are derived from the posted item by `audit.record_rows.row_from_item`; the others
    are set by the database (id), the caller (agent, received_at) or sealing (chain_*).
    """

    name: str
    kind: Kind
    column: str | None
    source: str
    ingested: bool = True
    null: bool = False
    blank: bool = False
    choices: type[models.TextChoices] | None = None
    help_text: str = ""

    @property
    def is_text(self) -> bool:
        return self.kind == Kind.TEXT


def _stored(
    name: str,
    kind: Kind,
    *,
    column: str | None = None,
    source: str | None = None,
    ingested: bool = True,
    null: bool = False,
    blank: bool = False,
    choices: type[models.TextChoices] | None = None,
    help_text: str = "",
) -> RecordField:
    column = column or name
    return RecordField(
        name, kind, column, source or column, ingested, null, blank, choices, help_text
    )


def _joined(name: str, kind: Kind, source: str) -> RecordField:
    return RecordField(name, kind, None, source, ingested=False, null=True)


RECORD_FIELDS: tuple[RecordField, ...] = (
    _stored("id", Kind.BIGINT, ingested=False),
    _stored("timestamp", Kind.DATETIME),
    _stored("received_at", Kind.DATETIME, ingested=False),
    _stored("agent", Kind.TEXT, column="agent_id", source="agent__slug", ingested=False),
    _stored("custom_agent", Kind.TEXT, blank=True),
    _stored("session_id", Kind.TEXT),
    _stored("sequence", Kind.BIGINT),
    _stored("interception_point", Kind.TEXT, choices=InterceptionPoint),
    _stored("mode", Kind.TEXT, choices=Mode),
    _stored("decision", Kind.TEXT, choices=Decision),
    _stored("outcome", Kind.TEXT, choices=Outcome),
    _stored("reason", Kind.TEXT, blank=True),
    _stored("resolved_by", Kind.TEXT, blank=True),
    _stored("decided_by", Kind.INTEGER, null=True),
    _stored("decided_hook", Kind.TEXT, blank=True),
    _stored("fold_truncated", Kind.BOOLEAN, null=True),
    _stored("input_identity", Kind.TEXT, blank=True),
    _stored("enforced_identity", Kind.TEXT, blank=True),
    _stored("hook_ids", Kind.TEXT_LIST),
    _stored("tool_name", Kind.TEXT, blank=True),
    _stored("framework", Kind.TEXT, blank=True),
    _stored("revision", Kind.TEXT, blank=True),
    _joined("chain_seq", Kind.BIGINT, "seal__chain_seq"),
    _joined("chain_prev", Kind.TEXT, "seal__chain_prev"),
    _joined("chain_hash", Kind.TEXT, "seal__chain_hash"),
    _stored("record", Kind.JSON, column="raw", help_text="The record wire as the agent sent it."),
)

EXPORT_COLUMNS: tuple[str, ...] = tuple(field.name for field in RECORD_FIELDS)
# The CSV cells a spreadsheet could run as a formula: every text field. The others are
# integers, UTC timestamps, true/false or JSON documents (`[…]`, `{…}`).
TEXT_COLUMNS: tuple[str, ...] = tuple(field.name for field in RECORD_FIELDS if field.is_text)
INGESTED_FIELDS: tuple[RecordField, ...] = tuple(f for f in RECORD_FIELDS if f.ingested)
INGEST_COLUMNS: tuple[str, ...] = tuple(f.column for f in INGESTED_FIELDS if f.column)
STORED_COLUMNS: tuple[str, ...] = tuple(f.column for f in RECORD_FIELDS if f.column)
