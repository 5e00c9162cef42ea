"""Dead-letter reports, the pure part: validate `POST /api/v1/records/dead-letters`.

An agent whose record batch the console refused keeps the records in a dead-letter file
beside its spool (console_client.records) and reports each such batch here, so the loss
is counted and shown on the agent's page instead of disappearing. The body is a JSON
array of 1 to MAX_REPORTS items:

    {"batch": "<id>", "records": n, "status": 4xx, "error": "<the console's answer>",
     "refused_at": "<RFC 3339>"}

Idempotent on (agent, batch). Only counts, a status and the console's own error text:
never the records themselves.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from audit.ingest import MAX_BATCH
from audit.record_rows import parse_timestamp
from console.errors import InvalidInput, pointer

MAX_REPORTS = 100
BATCH_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
ERROR_MAX = 1000
REPORT_KEYS = ("batch", "records", "status", "error", "refused_at")


@dataclass(frozen=True, slots=True)
class DeadLetterRow:
    batch: str
    records: int
    status: int
    error: str
    refused_at: dt.datetime


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _refused_at(value: Any) -> dt.datetime | str:
    if not isinstance(value, str) or len(value) > 64:
        return "must be an RFC 3339 timestamp."
    parsed = parse_timestamp(value)
    return "must be an RFC 3339 timestamp." if parsed is None else parsed


def _report_errors(report: Any) -> dict[str, str]:
    if not isinstance(report, dict):
        return {"": "must be an object {batch, records, status, error, refused_at}."}
    errors = {str(key): "unknown key." for key in report if key not in REPORT_KEYS}
    batch = report.get("batch")
    if not isinstance(batch, str) or not BATCH_ID.fullmatch(batch):
        errors["batch"] = "must be 1 to 64 letters, digits, '.', '_' or '-'."
    if not _int_in(report.get("records"), 1, MAX_BATCH):
        errors["records"] = f"must be an integer from 1 to {MAX_BATCH}."
    if not _int_in(report.get("status"), 400, 499):
        errors["status"] = "must be the 4xx status the console answered."
    error = report.get("error", "")
    if not isinstance(error, str) or len(error) > ERROR_MAX or "\x00" in error:
        errors["error"] = f"must be a string of at most {ERROR_MAX} characters."
    refused_at = _refused_at(report.get("refused_at"))
    if isinstance(refused_at, str):
        errors["refused_at"] = refused_at
    return errors


def _pointer(index: int, key: str) -> str:
    return pointer(index, key[:64]) if key else pointer(index)


def report_rows(body: Any) -> list[DeadLetterRow]:
    """The validated reports, or InvalidInput naming each bad field by JSON pointer."""
    if not isinstance(body, list) or not 1 <= len(body) <= MAX_REPORTS:
        raise InvalidInput(
            f"The body must be a JSON array of 1 to {MAX_REPORTS} dead-letter reports.",
            fields={"": [f"Send 1 to {MAX_REPORTS} reports."]},
        )
    fields: dict[str, list[str]] = {}
    rows: list[DeadLetterRow] = []
    for index, report in enumerate(body):
        errors = _report_errors(report)
        for key, message in errors.items():
            fields.setdefault(_pointer(index, key), []).append(message)
        refused_at = _refused_at(report.get("refused_at")) if not errors else None
        if isinstance(refused_at, dt.datetime):
            rows.append(
                DeadLetterRow(
                    batch=report["batch"],
                    records=report["records"],
                    status=report["status"],
                    error=report.get("error", ""),
                    refused_at=refused_at,
                )
            )
    if fields:
        first = next(iter(fields))
        raise InvalidInput(
            f"Invalid at {first}: {fields[first][0]} Nothing was stored.", fields=fields
        )
    return rows
