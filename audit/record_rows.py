"""The stored columns of one valid interception record (audit.ingest validated it): what
happened (`record_outcome`), which hook decided, and the record's instant in UTC. The keys
of a row are exactly `audit.record_fields.INGEST_COLUMNS`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from audit.models import Outcome
from console_client.reasons import keep_reasons

REJECTED_REASONS = frozenset({"reviewer_rejected", "approval_cancelled"})
EXPIRED_REASONS = frozenset({"approval_expired"})
HOST_ERROR_PREFIX = "host_error:"
MAX_UTC_OFFSET = dt.timedelta(hours=14)


# One record's stored columns by column name: the keys are exactly
# `audit.record_fields.INGEST_COLUMNS`, in that order (agent and received_at are added by
# the caller). A dict, because ingest builds one per record on its hot path.
RecordRow = dict[str, Any]


def record_outcome(record: dict[str, Any]) -> str:
    """What happened, in the order that decides it:

    1. `verdict.reason` starts with `host_error:` → host_error (the host failed closed);
    2. `resolved_by == "approval"` → approved (a reviewer lifted a liftable deny);
    3. `resolved_by == "rejection"`, or a resolver reason: `approval_expired` → expired,
       otherwise (`reviewer_rejected`, `approval_cancelled`, any other) → rejected;
    4. by `verdict.decision`: deny → denied, transform → transformed,
       allow with `verdict.warnings` → warned, allow → allowed.
    In evaluate_only mode the same outcome is what the policy *would* have done.
    """
    verdict = record["verdict"]
    reason = verdict.get("reason") or ""
    resolved_by = record.get("resolved_by") or ""
    if reason.startswith(HOST_ERROR_PREFIX):
        return Outcome.HOST_ERROR.value
    if resolved_by == "approval":
        return Outcome.APPROVED.value
    if resolved_by == "rejection" or reason in REJECTED_REASONS or reason in EXPIRED_REASONS:
        return (Outcome.EXPIRED if reason in EXPIRED_REASONS else Outcome.REJECTED).value
    decision = verdict["decision"]
    if decision == "deny":
        return Outcome.DENIED.value
    if decision == "transform":
        return Outcome.TRANSFORMED.value
    return (Outcome.WARNED if verdict.get("warnings") else Outcome.ALLOWED).value


def _decided_hook(record: dict[str, Any], verdicts: list[dict[str, Any]], reason: str) -> str:
    decided_by = record.get("decided_by")
    for summary in verdicts:
        if decided_by is not None and summary.get("index") == decided_by:
            return str(summary.get("name") or "")
        if decided_by is None and reason.startswith("host_error:"):
            if str(summary.get("reason") or "").startswith("host_error:"):
                return str(summary.get("name") or "")
    return ""


def parse_timestamp(raw: Any) -> dt.datetime | None | str:
    """The instant in UTC, None when absent, or an error message. Offsets are at most ±14:00
    (RFC 3339 in practice; PostgreSQL refuses larger ones) and the instant must fall in years
    1-9999 in UTC, or the stored row could not be read back."""
    if raw is None:
        return None
    try:
        parsed = dt.datetime.fromisoformat(raw)
    except ValueError:
        return "is not an RFC 3339 timestamp."
    offset = parsed.utcoffset()
    if offset is None:
        return "has no UTC offset."
    if not offset:
        return parsed  # already UTC (what the SDK writes): the hot path
    if abs(offset) > MAX_UTC_OFFSET:
        return "has a UTC offset beyond ±14:00."
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        return "is outside the years 1 to 9999 in UTC."


_UNPARSED: Any = object()


def row_from_item(
    record: dict[str, Any], meta: dict[str, Any] | None, timestamp: Any = _UNPARSED
) -> RecordRow:
    """Stored columns of one valid item (call after `audit.ingest.batch_items` checked it); `timestamp`
    is the record's `parse_timestamp`, when the caller has it already."""
    meta = meta or {}
    verdict = record["verdict"]
    reason = verdict.get("reason") or ""
    verdicts = record.get("verdicts") or []
    hook_ids = list(dict.fromkeys(str(v["name"]) for v in verdicts if v.get("name")))
    if timestamp is _UNPARSED:
        timestamp = parse_timestamp(record.get("timestamp"))
    revision = meta.get("revision")
    return {
        "timestamp": timestamp if isinstance(timestamp, dt.datetime) else None,
        "custom_agent": meta.get("custom_agent") or "",
        "session_id": record["session_id"],
        "sequence": int(record["sequence"]),
        "interception_point": record["interception_point"],
        "mode": record["mode"],
        "decision": verdict["decision"],
        "outcome": record_outcome(record),
        "reason": reason,
        "resolved_by": record.get("resolved_by") or "",
        "decided_by": None if record.get("decided_by") is None else int(record["decided_by"]),
        "decided_hook": _decided_hook(record, verdicts, reason),
        "fold_truncated": record.get("fold_truncated"),
        "input_identity": record.get("input_identity") or "",
        "enforced_identity": record.get("enforced_identity") or "",
        "hook_ids": hook_ids,
        "tool_name": meta.get("tool_name") or "",
        "framework": meta.get("framework") or "",
        "revision": "" if revision is None else str(revision),
        "raw": record,
    }


def _has_message(record: dict[str, Any]) -> bool:
    verdict = record["verdict"]
    return "message" in verdict or any(
        isinstance(w, dict) and "message" in w for w in verdict.get("warnings") or ()
    )


@dataclass(slots=True)
class ValidItem:
    """A posted item that passed every check of `audit.ingest`: its record (whose
    unopted reasons are stripped before it is stored), its meta, and the record's
    instant (`parse_timestamp`; None when the record has none). Its stored columns are
    derived when it is written (`row`): ingest's COPY derives each chunk's while
    PostgreSQL inserts the chunk before."""

    record: dict[str, Any]
    meta: dict[str, Any] | None
    timestamp: dt.datetime | None

    @property
    def key(self) -> tuple[str, int]:
        """The idempotency key within its agent: (session_id, sequence)."""
        return (self.record["session_id"], int(self.record["sequence"]))

    def row(self) -> RecordRow:
        return row_from_item(self.record, self.meta, self.timestamp)


def strip_unopted_reasons(items: list[ValidItem], opted_in: Callable[[], Collection[str]]) -> int:
    """Remove every message of a hook that did not opt in to "record its reason" (and every
    message no hook owns) from the items' records; `opted_in` (the agent's hook keys that
    do) is called only when a record carries a message. Returns the records changed."""
    carrying = [item for item in items if _has_message(item.record)]
    if not carrying:
        return 0
    keys = opted_in()
    changed = 0
    for item in carrying:
        kept = keep_reasons(item.record, keys)
        if kept != item.record:
            item.record, changed = kept, changed + 1
    return changed
