"""A hook's own page: what it is, the revisions of its scope, and what it decided day by
day, counted from the interception records that name its key (with links to them)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_safe

from agents import selectors
from agents.models import Hook, HookMode
from agents.views import _agent_page
from audit.selectors import HOOK_ACTIVITY_KINDS, HookActivity, hook_activity
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required

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


def _records_url(hook: Hook, kind: str = "", **extra: str) -> str:
    query = {"agent": hook.agent.slug, "hook": hook.key, **extra}
    if kind in KIND_OUTCOMES:
        query["outcome"] = KIND_OUTCOMES[kind]
    return f"{reverse('audit:records')}?{urlencode(query)}"


def _ran_for(hook: Hook) -> Callable[[str], bool]:
    if hook.event == "Stop":
        return lambda tool_name: True
    return lambda tool_name: selectors.hook_matches_tool(hook, tool_name)


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


@role_required(Role.ADMIN)
@require_safe
def hook_overview(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    activity = hook_activity(
        user=request.user, key=hook.key, ran_for=_ran_for(hook), days=ACTIVITY_DAYS
    )
    context = _agent_page(
        hook.agent,
        "custom" if hook.custom_agent else "hooks",
        custom_agent=hook.custom_agent,
        hook=hook,
        activity=activity,
        activity_days=ACTIVITY_DAYS,
        all_records_url=_records_url(hook),
        revisions=selectors.hook_revisions(hook),
        **_activity_rows(hook, activity),
    )
    return render_page(request, "agents/hook_overview.html", context)
