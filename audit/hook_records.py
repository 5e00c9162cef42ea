"""Selectors over the records of one hook: the last hook error of each hook of a scope
(the agent pages' health strip) and what one hook decided day by day (its hook page). Both
read the per-hook verdict summaries the records carry, never a payload. And the hooks a page
of records names (`hooks_shown`), for the audit pages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from agents.models import Agent
from agents.selectors import hook_refs
from audit.models import InterceptionRecord, Outcome
from audit.selectors import records_visible_to
from console.roles import is_admin

HOOK_ERROR_REASON = "console:hook_error"


def hooks_shown(user: Any, keys: Iterable[str]) -> dict[str, Any]:
    """The hooks a page's records name, resolved in one query (`hook_names`: key → HookRef,
    agents.selectors.hook_refs), and whether their names link to the hook pages (admins may
    open them) or to their records."""
    return {"hook_names": hook_refs(keys), "hook_pages": is_admin(user)}


HOOK_ERRORS_SCANNED = 500


@dataclass(frozen=True)
class HookLastError:
    """The latest record that shows a hook error of one hook. `shared`: the record shows a
    hook error of one of several hooks that ran in that call (records carry no payload, so
    which one is not recorded)."""

    record: InterceptionRecord
    reason: str
    shared: bool


def _is_hook_error(reason: Any) -> bool:
    return str(reason or "").startswith("host_error:") or reason == HOOK_ERROR_REASON


def _hook_errors_in(record: InterceptionRecord, keys: set[str]) -> list[tuple[str, str, bool]]:
    """(hook key, reason, shared) for each hook of `keys` the record shows an error of."""
    raw = record.raw if isinstance(record.raw, dict) else {}
    summaries = [s for s in raw.get("verdicts") or [] if isinstance(s, dict)]
    found = [
        (str(s["name"]), str(s.get("reason")), False)
        for s in summaries
        if s.get("name") in keys and _is_hook_error(s.get("reason"))
    ]
    if found:
        return found
    if any(_is_hook_error(s.get("reason")) for s in summaries):
        return []  # the record names the hook that failed, and it is none of `keys`
    warnings = (raw.get("verdict") or {}).get("warnings") or []
    if not any(isinstance(w, dict) and w.get("reason") == HOOK_ERROR_REASON for w in warnings):
        return []
    ran = [key for key in dict.fromkeys(record.hook_ids) if key in keys]
    return [(key, HOOK_ERROR_REASON, len(ran) > 1) for key in ran]


def hook_last_errors(agent: Agent, keys: list[str]) -> dict[str, HookLastError]:
    """The latest hook error recorded for each of `keys` (hook keys of `agent`), among the
    agent's most recent HOOK_ERRORS_SCANNED warned or host-error records."""
    wanted = set(keys)
    recent = (
        InterceptionRecord.objects.filter(
            agent=agent, outcome__in=[Outcome.WARNED, Outcome.HOST_ERROR]
        )
        .only("id", "timestamp", "raw", "hook_ids", "tool_name", "outcome")
        .order_by("-timestamp", "-id")[:HOOK_ERRORS_SCANNED]
    )
    last: dict[str, HookLastError] = {}
    for record in recent:
        for key, reason, shared in _hook_errors_in(record, wanted):
            last.setdefault(key, HookLastError(record=record, reason=reason, shared=shared))
        if len(last) == len(wanted):
            break
    return last


# What one hook did, from the per-hook summaries of the records that name it ---------------

HOOK_ACTIVITY_KINDS: tuple[str, ...] = (
    "allowed",
    "blocked",
    "escalated",
    "would_block",
    "would_escalate",
    "errors",
    "timeouts",
)
_KIND_OF_REASON = {
    "console:hook_blocked": "blocked",
    "console:stop_rejected": "blocked",
    "console:hook_asked": "escalated",
    "console:approval_required": "escalated",
    "console:shadow_would_block": "would_block",
    "console:shadow_would_escalate": "would_escalate",
    "console:hook_error": "errors",
    "console:hook_timeout": "timeouts",
    "host_error:interceptor_timeout": "timeouts",
}
HOOK_ACTIVITY_MAX_RECORDS = 50_000


@dataclass(frozen=True)
class HookActivity:
    days: list[tuple[dt.date, dict[str, int]]]  # oldest first, every day of the window
    totals: dict[str, int]
    since: dt.datetime
    capped: bool  # more records than HOOK_ACTIVITY_MAX_RECORDS: the oldest were not counted


def hook_verdict_kind(reason: str | None) -> str:
    """The activity kind of one hook's verdict reason (a plain allow has none)."""
    if reason in _KIND_OF_REASON:
        return _KIND_OF_REASON[str(reason)]
    return "errors" if (reason or "").startswith("host_error:") else "allowed"


def hook_activity(
    *, user: Any, key: str, ran_for: Any, days: int = 14, now: dt.datetime | None = None
) -> HookActivity:
    """Per day (UTC) of the last `days`, what hook `key` decided, counted from its own
    summary in each record (`verdicts[].name == key`). A plain allow counts only when
    `ran_for(tool_name)` says the hook applied (records list every hook of the point,
    matching or not)."""
    now = now or timezone.now()
    first_day = now.astimezone(dt.UTC).date() - dt.timedelta(days=days - 1)
    since = dt.datetime.combine(first_day, dt.time.min, tzinfo=dt.UTC)
    rows = (
        records_visible_to(user)
        .filter(hook_ids__has=key, timestamp__gte=since)
        .order_by("-timestamp")
        .values_list("timestamp", "tool_name", "raw__verdicts")[: HOOK_ACTIVITY_MAX_RECORDS + 1]
    )
    per_day = {
        first_day + dt.timedelta(days=n): dict.fromkeys(HOOK_ACTIVITY_KINDS, 0) for n in range(days)
    }
    count = 0
    for timestamp, tool_name, verdicts in rows.iterator(chunk_size=2000):
        count += 1
        if count > HOOK_ACTIVITY_MAX_RECORDS:
            break
        summary = next((v for v in verdicts or [] if v.get("name") == key), None)
        if summary is None:
            continue
        kind = hook_verdict_kind(summary.get("reason"))
        if kind == "allowed" and not ran_for(tool_name):
            continue
        bucket = per_day.get(timestamp.astimezone(dt.UTC).date())
        if bucket is not None:  # a record stamped after `now` (a fast agent clock) waits
            bucket[kind] += 1
    totals = {kind: sum(day[kind] for day in per_day.values()) for kind in HOOK_ACTIVITY_KINDS}
    return HookActivity(
        days=sorted(per_day.items()),
        totals=totals,
        since=since,
        capped=count > HOOK_ACTIVITY_MAX_RECORDS,
    )
