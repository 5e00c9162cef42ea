"""What the audit app adds to the agent pages, through the extension points the agents app
declares (agents/extensions.py); registered by `AuditConfig.ready()`:

- the agent's hooks page: the dead-letter summary (record batches the console refused);
- a hook's own page: what the hook decided day by day, counted from the interception records
  that name its key, with links into the audit explorer;
- the health strip: each hook's last recorded error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode

from agents import extensions
from agents.extensions import HookNote
from agents.hook_matching import hook_matches_tool
from agents.models import Agent, Hook, HookMode
from audit.hook_records import (
    HOOK_ACTIVITY_KINDS,
    HOOK_ERROR_REASON,
    HookActivity,
    HookLastError,
    hook_activity,
    hook_last_errors,
)
from audit.selectors import dead_letter_summary

ACTIVITY_DAYS = 14
KIND_LABELS = {
    "allowed": "Allowed",
    "blocked": "Blocked",
    "escalated": "Escalated",
    "would_block": "Would have blocked",
    "would_escalate": "Would have escalated",
    "errors": "Errors",
    "timeouts": "Timeouts",
}
# The audit explorer's outcome filter that holds a kind's records (the hook filter always
# applies; escalations end approved, rejected or expired, timeouts warned or failed).
KIND_OUTCOMES = {
    "allowed": "allowed",
    "blocked": "denied",
    "would_block": "warned",
    "would_escalate": "warned",
    "errors": "warned",
}


def register() -> None:
    extensions.agent_hooks_sections.register(dead_letters_section)
    extensions.hook_page_sections.register(hook_activity_section)
    extensions.hook_notes.register(last_error_notes)


def dead_letters_section(agent: Agent) -> str:
    summary = dead_letter_summary(agent)
    if summary is None:
        return ""
    return render_to_string("audit/_dead_letters.html", {"dead_letters": summary})


def _last_error_message(last: HookLastError) -> str:
    at = last.record.timestamp.strftime("%Y-%m-%d %H:%M UTC")
    tool = f" after {last.record.tool_name}" if last.record.tool_name else ""
    if last.reason == HOOK_ERROR_REASON:
        what = "the hook failed (a crash, a timeout or no judge) and its failMode decided"
    else:
        what = f"the agent's host failed running it ({last.reason})"
    shared = " — one of several hooks in that call; records do not say which" if last.shared else ""
    return f"Last error {at}{tool}: {what}{shared}."


def last_error_notes(agent: Agent, keys: list[str]) -> list[HookNote]:
    return [
        HookNote(key, _last_error_message(last), last.record.pk)
        for key, last in hook_last_errors(agent, keys).items()
    ]


def _records_url(hook: Hook, kind: str = "", **extra: str) -> str:
    query = {"agent": hook.agent.slug, "hook": hook.key, **extra}
    if kind in KIND_OUTCOMES:
        query["outcome"] = KIND_OUTCOMES[kind]
    return f"{reverse('audit:records')}?{urlencode(query)}"


def _ran_for(hook: Hook) -> Callable[[str], bool]:
    if hook.event == "Stop":
        return lambda tool_name: True
    return lambda tool_name: hook_matches_tool(hook, tool_name)


def _activity_rows(hook: Hook, activity: HookActivity) -> dict[str, Any]:
    """Totals and newest-first days for the kinds this hook shows: "would have" kinds for a
    shadow hook, or for any hook that recorded some (shadowed earlier in the window)."""
    kinds = [
        kind
        for kind in HOOK_ACTIVITY_KINDS
        if not kind.startswith("would_") or hook.mode == HookMode.SHADOW or activity.totals[kind]
    ]
    since = activity.since.date().isoformat()
    peak = max([sum(counts[kind] for kind in kinds) for _day, counts in activity.days] + [1])
    days = []
    for day, counts in reversed(activity.days):
        until = (day + dt.timedelta(days=1)).isoformat()
        segments, x = [], 0.0
        for kind in kinds:
            width = 100.0 * counts[kind] / peak
            if width:
                segments.append((kind, f"{x:.2f}", f"{width:.2f}"))
            x += width
        days.append(
            {
                "date": day,
                "counts": [(kind, counts[kind]) for kind in kinds],
                "total": sum(counts[kind] for kind in kinds),
                "url": _records_url(hook, since=day.isoformat(), until=until),
                "segments": segments,
            }
        )
    return {
        "kinds": [
            {
                "kind": kind,
                "label": KIND_LABELS[kind],
                "total": activity.totals[kind],
                "url": _records_url(hook, kind, since=since),
            }
            for kind in kinds
        ],
        "days": days,
    }


def hook_activity_section(user: Any, hook: Hook) -> str:
    activity = hook_activity(user=user, key=hook.key, ran_for=_ran_for(hook), days=ACTIVITY_DAYS)
    context = {
        "activity": activity,
        "activity_days": ACTIVITY_DAYS,
        "all_records_url": _records_url(hook, range="all"),
        **_activity_rows(hook, activity),
    }
    return render_to_string("audit/_hook_activity.html", context)
