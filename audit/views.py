"""The auditor's pages at /audit/: record search, record detail, session timelines, recent
sessions, governance events and the dashboard.

Read-only: there is no form that writes and no POST route. Filtering goes through
`audit.selectors` (the one filter implementation the API and the export use too); an htmx
request gets the named results partial of the same page, and every htmx link is also a
plain link.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET
from django_htmx.middleware import HtmxDetails

from agents.models import Agent
from audit import dashboard, pages, selectors
from audit.selectors import FilterError
from console.roles import is_auditor


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def auditor_required[V: Callable[..., HttpResponse]](view: V) -> V:
    """Auditors and admins read; everyone else gets 403, anonymous visitors the login page."""

    @wraps(view)
    def wrapped(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_auditor(request.user):
            raise PermissionDenied("The audit pages are for auditors and admins.")
        return view(request, *args, **kwargs)

    return require_GET(login_required(wrapped))  # type: ignore[return-value]


def _render(
    request: HtmxHttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    status: int,
    push_url: str,
) -> HttpResponse:
    """The whole page, or for htmx only its `results` partial. The pushed URL is the
    clean, shareable one (htmx would push every empty form field otherwise). A history
    restore (back button with no snapshot: the pages opt out of htmx's localStorage
    cache) gets the whole page, and `Vary: HX-Request` keeps caches from mixing the two."""
    htmx = request.htmx
    if htmx and not htmx.boosted and not htmx.history_restore_request:
        # htmx swaps only 2xx responses by default, so a filter error keeps 200 here.
        response = render(request, f"{template}#results", context)
        response["HX-Push-Url"] = push_url
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


@auditor_required
def records(request: HtmxHttpRequest) -> HttpResponse:
    filters = selectors.clean_filters(request.GET)
    error: FilterError | None = None
    page: selectors.Page[Any] = selectors.Page(items=[], next_cursor=None)
    try:
        limit = selectors.parse_limit(request.GET.get("limit"))
        qs = selectors.records_filter(request.GET, user=request.user)
        page = selectors.records_page(qs, request.GET.get("cursor") or None, limit)
    except FilterError as exc:
        error = exc
    context = {
        "audit_tab": "records",
        "filters": filters,
        "form": pages.record_filter_form(filters),
        "page": page,
        "error": error,
        "cursor": request.GET.get("cursor", ""),
        "older_url": pages.query_url(
            request.path, filters, limit=request.GET.get("limit"), cursor=page.next_cursor
        ),
        "newest_url": pages.query_url(request.path, filters, limit=request.GET.get("limit")),
        "exports": pages.export_links(filters),
        "described": selectors.describe_filters(filters),
        "quick_ranges": pages.quick_ranges(request.path, filters),
    }
    push_url = pages.query_url(request.path, filters, cursor=context["cursor"])
    return _render(
        request, "audit/records.html", context, status=400 if error else 200, push_url=push_url
    )


@auditor_required
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
        "verdicts": pages.verdict_rows(record),
        "raw_json": pages.pretty_json(record.raw),
    }
    return render(request, "audit/record_detail.html", context)


@auditor_required
def session_timeline(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    agent_slug = request.GET.get("agent") or None
    qs = selectors.session_records(request.user, session_id, agent_slug=agent_slug)
    timeline = pages.build_timeline(qs, session_id=session_id, agent_slug=agent_slug)
    return render(
        request,
        "audit/session.html",
        {"audit_tab": "sessions", "session_id": session_id, "timeline": timeline},
        status=200,
    )


@auditor_required
def sessions(request: HtmxHttpRequest) -> HttpResponse:
    params = pages.with_default_since(request.GET, days=pages.SESSIONS_DEFAULT_DAYS)
    filters = selectors.clean_filters(params, pages.SESSION_FILTERS)
    error: FilterError | None = None
    rows: list[dict[str, Any]] = []
    try:
        rows = pages.recent_sessions(selectors.records_filter(params, user=request.user))
    except FilterError as exc:
        error = exc
    context = {
        "audit_tab": "sessions",
        "filters": filters,
        "agents": Agent.objects.order_by("slug").values_list("slug", flat=True),
        "rows": rows,
        "limit": pages.SESSIONS_LIMIT,
        "error": error,
    }
    push_url = pages.query_url(
        request.path, selectors.clean_filters(request.GET, pages.SESSION_FILTERS)
    )
    return _render(
        request, "audit/sessions.html", context, status=400 if error else 200, push_url=push_url
    )


@auditor_required
def events(request: HtmxHttpRequest) -> HttpResponse:
    filters = selectors.clean_filters(request.GET, selectors.GOVERNANCE_FILTERS)
    error: FilterError | None = None
    page: selectors.Page[Any] = selectors.Page(items=[], next_cursor=None)
    try:
        limit = selectors.parse_limit(request.GET.get("limit"))
        qs = selectors.governance_events_filter(request.GET, user=request.user)
        page = selectors.governance_events_page(
            qs.select_related("agent"), request.GET.get("cursor") or None, limit
        )
    except FilterError as exc:
        error = exc
    context = {
        "audit_tab": "events",
        "filters": filters,
        "form": pages.event_filter_form(filters),
        "page": page,
        "rows": pages.event_rows(page.items),
        "error": error,
        "cursor": request.GET.get("cursor", ""),
        "older_url": pages.query_url(
            request.path, filters, limit=request.GET.get("limit"), cursor=page.next_cursor
        ),
        "newest_url": pages.query_url(request.path, filters, limit=request.GET.get("limit")),
    }
    push_url = pages.query_url(request.path, filters, cursor=context["cursor"])
    return _render(
        request, "audit/events.html", context, status=400 if error else 200, push_url=push_url
    )


@auditor_required
def dashboard_page(request: HtmxHttpRequest) -> HttpResponse:
    days = pages.dashboard_days(request.GET.get("days"))
    today = timezone.now().astimezone(dt.UTC).date()
    first_day = today - dt.timedelta(days=days - 1)
    since = dt.datetime.combine(first_day, dt.time.min, tzinfo=dt.UTC)
    agent_slug = (request.GET.get("agent") or "").strip()
    params = QueryDict(mutable=True)
    params.update({"since": since.isoformat(), "agent": agent_slug})
    qs = selectors.records_filter(params, user=request.user)
    wait = dashboard.reviewer_wait(since=since, until=None, agent_slug=agent_slug or None)
    context = {
        "audit_tab": "dashboard",
        "days": days,
        "day_choices": pages.DASHBOARD_DAY_CHOICES,
        "agent": agent_slug,
        "agents": Agent.objects.order_by("slug").values_list("slug", flat=True),
        "since": since,
        **pages.dashboard_charts(qs, first_day=first_day, last_day=today, wait=wait, params=params),
    }
    return render(request, "audit/dashboard.html", context)
