"""The auditor's pages at /audit/: record detail, session timelines, recent sessions,
governance events and the dashboard (the record explorer itself is `audit.views_explorer`).

Read-only: no view here writes (the one POST of the audit pages, "Verify chain", is in
`audit.views_verify`). The filter forms of `audit.forms` parse the query string;
filtering goes through `audit.selectors` (the one filter implementation the API and the
export use too); the dashboard's numbers and charts come from `audit.dashboard`, the
session timeline from `audit.timeline`. An htmx request gets the named results partial of
the same page, and every htmx link is also a plain link.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from agents.governance_changes import changes_summary, diff_of_changes
from audit import dashboard, forms, governance_selectors, selectors, timeline
from audit.dashboard_wait import reviewer_wait
from audit.hook_records import hooks_shown
from audit.models import InterceptionRecord
from console.errors import InvalidInput
from console.governance.models import GovernanceEvent
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required
from console_client.reasons import message_owners


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _verdict_rows(record: InterceptionRecord) -> list[dict[str, Any]]:
    """The record's per-hook verdicts, each hook linked to the records it decided."""
    items = record.raw.get("verdicts") or []
    labels = dashboard.hook_labels([str(item.get("name")) for item in items if item.get("name")])
    return [
        {
            "index": item.get("index"),
            "name": item.get("name") or "",
            "label": labels.get(str(item.get("name")), ""),
            "hook_name": labels.get(str(item.get("name")), "").split(" · ")[0],
            "decision": item.get("decision"),
            "reason": item.get("reason") or "",
            "decided": record.decided_by is not None and item.get("index") == record.decided_by,
            "hook_url": forms.search_url(hook=item.get("name")) if item.get("name") else "",
        }
        for item in items
    ]


def _warning_rows(record: InterceptionRecord) -> list[dict[str, Any]]:
    """The verdict's warnings, each with the hook it came from (console_client.reasons)."""
    warnings = (record.raw.get("verdict") or {}).get("warnings") or []
    _decided, owners = message_owners(record.raw)
    return [
        {"reason": w.get("reason") or "", "message": w.get("message") or "", "hook": owner or ""}
        for w, owner in zip(warnings, owners, strict=False)
        if isinstance(w, dict)
    ]


def _event_rows(events: Iterable[GovernanceEvent]) -> list[dict[str, Any]]:
    """Each event with its recorded configuration change (`diff`, for events that store
    one), else its before/after as JSON and the names of the changed keys."""
    rows = []
    for event in events:
        before = event.before if isinstance(event.before, dict) else None
        after = event.after if isinstance(event.after, dict) else None
        changed: list[str] = []
        if before is not None and after is not None:
            changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        diff = diff_of_changes(event.changes)
        rows.append(
            {
                "event": event,
                "diff": diff,
                "diff_summary": changes_summary(diff) if diff is not None else "",
                "has_detail": event.before is not None or event.after is not None,
                "before": "" if event.before is None else _pretty_json(event.before),
                "after": "" if event.after is None else _pretty_json(event.after),
                "changed": changed,
            }
        )
    return rows


def _session_url(row: dict[str, Any]) -> dict[str, Any]:
    path = reverse("audit:session", args=[row["session_id"]])
    return {**row, "url": forms.query_url(path, {"agent": row["agent__slug"]})}


@require_GET
@role_required(Role.AUDITOR)
def record_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    record = selectors.get_record_for_user(request.user, pk)
    try:
        seal = record.seal
    except ObjectDoesNotExist:
        seal = None
    context = {
        "audit_tab": "records",
        "record": record,
        "seal": seal,
        "verdict": record.raw.get("verdict") or {},
        "verdicts": _verdict_rows(record),
        "warnings": _warning_rows(record),
        **hooks_shown(request.user, [record.decided_hook, *record.hook_ids]),
        "raw_json": _pretty_json(record.raw),
    }
    return render(request, "audit/record_detail.html", context)


@require_GET
@role_required(Role.AUDITOR)
def session_timeline(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    agent_slug = request.GET.get("agent") or None
    qs = selectors.session_records(request.user, session_id, agent_slug=agent_slug)
    session = timeline.build_timeline(qs, session_id=session_id, agent_slug=agent_slug)
    keys = [
        key
        for entry in session.entries
        for key in (
            [entry["record"].decided_hook, *entry["record"].hook_ids]
            if entry["kind"] == "record"
            else [entry["escalation"].hook_key]
            if entry["kind"] == "approval"
            else []
        )
    ]
    context = {
        "audit_tab": "sessions",
        "session_id": session_id,
        "timeline": session,
        **hooks_shown(request.user, keys),
    }
    return render(request, "audit/session.html", context, status=200)


@require_GET
@role_required(Role.AUDITOR)
def sessions(request: HtmxHttpRequest) -> HttpResponse:
    params = forms.with_default_since(request.GET, days=forms.SESSIONS_DEFAULT_DAYS)
    filters = selectors.clean_filters(params, forms.SESSION_FILTERS)
    error: InvalidInput | None = None
    rows: list[dict[str, Any]] = []
    try:
        found = selectors.recent_sessions(selectors.records_filter(params, user=request.user))
        rows = [_session_url(row) for row in found]
    except InvalidInput as exc:
        error = exc
    context = {
        "audit_tab": "sessions",
        "filters": filters,
        "agents": selectors.agent_slugs,
        "rows": rows,
        "limit": selectors.SESSIONS_LIMIT,
        "error": error,
    }
    push_url = forms.query_url(
        request.path, selectors.clean_filters(request.GET, forms.SESSION_FILTERS)
    )
    return render_page(
        request,
        "audit/sessions.html",
        context,
        partial="results",
        status=400 if error else 200,
        push_url=push_url,
    )


@require_GET
@role_required(Role.AUDITOR)
def events(request: HtmxHttpRequest) -> HttpResponse:
    form = forms.EventFilterForm(request.GET)
    filters = form.filters
    error: InvalidInput | None = None
    page: selectors.Page[Any] = selectors.Page(items=[], next_cursor=None)
    try:
        limit = selectors.parse_limit(request.GET.get("limit"))
        qs = governance_selectors.governance_events_filter(filters, user=request.user)
        page = governance_selectors.governance_events_page(
            qs.select_related("agent"), request.GET.get("cursor") or None, limit
        )
    except InvalidInput as exc:
        error = exc
    cursor = request.GET.get("cursor", "")
    context = {
        "audit_tab": "events",
        "filters": filters,
        "form": form,
        "page": page,
        "rows": _event_rows(page.items),
        "error": error,
        "cursor": cursor,
        "older_url": forms.query_url(
            request.path, filters, limit=request.GET.get("limit"), cursor=page.next_cursor
        ),
        "newest_url": forms.query_url(request.path, filters, limit=request.GET.get("limit")),
        "exports": forms.export_links(
            filters, url_name=forms.GOVERNANCE_EXPORT_URL_NAME, names=selectors.GOVERNANCE_FILTERS
        ),
    }
    push_url = forms.query_url(request.path, filters, cursor=cursor)
    return render_page(
        request,
        "audit/events.html",
        context,
        partial="results",
        status=400 if error else 200,
        push_url=push_url,
    )


@require_GET
@role_required(Role.AUDITOR)
def dashboard_page(request: HtmxHttpRequest) -> HttpResponse:
    rng = dashboard.dashboard_range(request.GET.get("range"))
    since = rng.since(timezone.now())
    agent_slug = (request.GET.get("agent") or "").strip()
    wait = reviewer_wait(since=since, bar=rng.bar, agent_slug=agent_slug or None)
    context = {
        "audit_tab": "dashboard",
        "range": rng,
        "ranges": dashboard.RANGES.values(),
        "agent": agent_slug,
        "agents": selectors.agent_slugs,
        "since": since,
        **dashboard.dashboard_context(rng, since=since, agent_slug=agent_slug, wait=wait),
    }
    return render(request, "audit/dashboard.html", context)
