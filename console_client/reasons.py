"""Recorded reasons: which free text of a record belongs to which hook, and what is kept.

Records are payload-free: the verdict's and the warnings' `message` (a hook's own words,
which may quote the payload) never leave the agent, except for a hook an admin opted in to
"record its reason" (`recordReason: true` in its binding config, docs/audit-storage.md).
The SDK's record projection already bounds every message to 256 UTF-8 bytes (truncated,
with `…`), so a kept reason is at most that.

Who said what, on the SDK's record wire (interception-record.schema.json):

- `verdict.message` belongs to the deciding interceptor, `verdicts[decided_by].name`
  (none for a pure allow or a host-synthesized verdict);
- `verdict.warnings[i].message` belongs to the hook whose per-interceptor summary carries the
  warning's reason: console_client's hooks warn at most once, with the warning's reason also
  on their own verdict (`console_client.evaluation._warn`), and the SDK folds warnings in
  registration order, so the i-th warning of reason R is the i-th summary of reason R.

A message no hook can be found for belongs to none and is never kept. The exception is a
host-synthesized verdict (`host_error:*`): its message is the SDK's own payload-free detail
(an exception type name such as `CancelledError`), kept on every record. The console applies
the same rule at ingest (audit.ingest), so a host that is not console_client cannot store a
message of a hook that did not opt in either.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

RECORD_REASON_KEY = "recordReason"


def reason_hooks(document: dict[str, Any]) -> frozenset[str]:
    """Keys of the hooks of a declaration document that record their reason."""
    return frozenset(
        str(binding["id"])
        for binding in document.get("bindings") or []
        if isinstance(binding, dict)
        and isinstance(binding.get("config"), dict)
        and binding["config"].get(RECORD_REASON_KEY) is True
    )


def _summaries(wire: dict[str, Any]) -> list[dict[str, Any]]:
    verdicts = wire.get("verdicts") or []
    return sorted(
        (item for item in verdicts if isinstance(item, dict)), key=lambda v: v.get("index", 0)
    )


def message_owners(wire: dict[str, Any]) -> tuple[str | None, list[str | None]]:
    """(hook key of `verdict.message`, hook key of each `verdict.warnings[i].message`)."""
    summaries = _summaries(wire)
    decided_by = wire.get("decided_by")
    verdict_owner = next(
        (
            str(item["name"])
            for item in summaries
            if decided_by is not None and item.get("index") == decided_by and item.get("name")
        ),
        None,
    )
    used: set[int] = set()
    warning_owners: list[str | None] = []
    for warning in (wire.get("verdict") or {}).get("warnings") or []:
        reason = warning.get("reason") if isinstance(warning, dict) else None
        owner = None
        for position, item in enumerate(summaries):
            if position not in used and reason and item.get("reason") == reason:
                used.add(position)
                owner = str(item["name"]) if item.get("name") else None
                break
        warning_owners.append(owner)
    return verdict_owner, warning_owners


def host_synthesized(verdict: dict[str, Any]) -> bool:
    """A verdict the SDK host wrote itself (`host_error:*`, a reason interceptors may not
    use): its message is the SDK's payload-free detail (an exception type name or a path,
    spec §14), not a hook's words, and is always kept."""
    return str(verdict.get("reason") or "").startswith("host_error:")


def keep_reasons(wire: dict[str, Any], opted_in: Collection[str]) -> dict[str, Any]:
    """The record wire with every message removed except those of hooks in `opted_in`
    (a new dict when anything changes; `wire` itself is never modified)."""
    verdict = wire.get("verdict")
    if not isinstance(verdict, dict):
        return wire
    warnings = verdict.get("warnings") or []
    has_message = "message" in verdict or any(
        isinstance(w, dict) and "message" in w for w in warnings
    )
    if not has_message:
        return wire
    verdict_owner, warning_owners = message_owners(wire) if opted_in else (None, [])
    kept = dict(verdict)
    if not host_synthesized(verdict) and (verdict_owner is None or verdict_owner not in opted_in):
        kept.pop("message", None)
    if warnings:
        owners = warning_owners or [None] * len(warnings)
        kept["warnings"] = [
            warning
            if owner is not None and owner in opted_in
            else {k: v for k, v in warning.items() if k != "message"}
            for warning, owner in zip(warnings, owners, strict=False)
        ]
    return {**wire, "verdict": kept}


def recorded_reasons(wire: dict[str, Any]) -> list[tuple[str, str]]:
    """(hook key, text) of every message the record kept, in order (the console stores only
    those of hooks that opted in)."""
    verdict = wire.get("verdict") or {}
    verdict_owner, warning_owners = message_owners(wire)
    found: list[tuple[str, str]] = []
    if verdict_owner and verdict.get("message") and not host_synthesized(verdict):
        found.append((verdict_owner, str(verdict["message"])))
    for warning, owner in zip(verdict.get("warnings") or [], warning_owners, strict=False):
        if owner and isinstance(warning, dict) and warning.get("message"):
            if (owner, str(warning["message"])) not in found:
                found.append((owner, str(warning["message"])))
    return found
