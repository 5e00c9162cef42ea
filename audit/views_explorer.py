"""The record explorer at /audit/: search with a period (relative or absolute), a
histogram of the matching records, facets with counts, the exact total, keyset pages that
keep their place in the URL, tool/hook suggestions and per-user saved views.

Reads go through `audit.selectors.records_search` (the one filter, shared with the API and
the export; read from the read replica when one is configured) and `audit.explorer`
(period, histogram, facets, suggestions); saved views through `audit.saved_views`. An
htmx request gets a partial of the same page: the whole results region (`results`, the
form's own submission), the form and the results (`explorer`, HX-Target `explorer-root`:
a facet or chip click changes the form's values), or only the table and pager when paging
(`list`, HX-Target `record-list`: the histogram and facets do not change between pages).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from audit import explorer, forms, saved_views, selectors
from audit.hook_records import hooks_shown
from console.errors import DomainError, InvalidInput
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required


def _saved_context(
    request: HtmxHttpRequest, query: str, error: DomainError | None = None
) -> dict[str, Any]:
    views = saved_views.saved_views_for_user(request.user)
    return {
        "saved_views": [{"view": v, "url": saved_views.saved_view_url(v)} for v in views],
        "saved_query": query,
        "saved_error": error,
    }


@require_GET
@role_required(Role.AUDITOR)
def records(request: HtmxHttpRequest) -> HttpResponse:
    now = explorer.now_utc()
    form = forms.RecordFilterForm(request.GET)
    filters = form.filters
    effective, defaulted = explorer.explorer_params(request.GET)
    list_only = is_list_request(request)
    error: InvalidInput | None = None
    page: selectors.Page[Any] = selectors.Page(items=[], next_cursor=None)
    hist: explorer.Histogram | None = None
    found: list[explorer.Facet] = []
    period: explorer.Period | None = None
    try:
        limit = selectors.parse_limit(request.GET.get("limit"))
        period = explorer.explorer_period(effective, now=now, defaulted=defaulted)
        qs = selectors.records_search(effective, user=request.user, now=now)
        page = selectors.records_page(qs, request.GET.get("cursor") or None, limit)
        if not list_only:
            hist, found = explorer.overview(qs, period, now=now)
    except InvalidInput as exc:
        error = exc
    cursor = request.GET.get("cursor", "")
    hook_keys = [v.value for f in found if f.name == "hook" for v in f.values]
    shown = hooks_shown(
        request.user,
        [
            *(k for r in page.items for k in (r.decided_hook, *r.hook_ids)),
            filters.get("hook", ""),
            *hook_keys,
        ],
    )
    names = {key: ref.name for key, ref in shown["hook_names"].items()}
    query = forms.query_url("", filters).lstrip("?")
    context = {
        "audit_tab": "records",
        "filters": filters,
        "form": _display_form(request, defaulted),
        "page": page,
        "error": error,
        "cursor": cursor,
        "period": period,
        "histogram": hist,
        "histogram_svg": forms.histogram_svg(request.path, filters, hist) if hist else "",
        "facets": forms.facet_rows(request.path, filters, found),
        "chips": forms.active_chips(request.path, filters, names),
        "tool_suggestions": next((f.values for f in found if f.name == "tool_name"), []),
        "older_url": forms.query_url(
            request.path, filters, limit=request.GET.get("limit"), cursor=page.next_cursor
        ),
        "newest_url": forms.query_url(request.path, filters, limit=request.GET.get("limit")),
        "exports": forms.export_links(effective),
        "described": selectors.describe_filters(effective),
        "from_replica": selectors.search_database() == selectors.REPLICA,
        **shown,
        **_saved_context(request, query),
    }
    push_url = forms.query_url(request.path, filters, limit=request.GET.get("limit"), cursor=cursor)
    return render_page(
        request,
        "audit/records.html",
        context,
        partial=_partial(request),
        status=400 if error else 200,
        push_url=push_url,
    )


def _partial(request: HtmxHttpRequest) -> str:
    """What an htmx request swaps: the list (a page turn), the form and the results (a
    facet or a filter chip: the form must show the new filter), or the results (the
    form's own submission)."""
    target = request.headers.get("HX-Target")
    if target == "record-list":
        return "list"
    return "explorer" if target == "explorer-root" else "results"


def is_list_request(request: HtmxHttpRequest) -> bool:
    """An htmx page turn: only the table and pager are swapped."""
    return bool(request.htmx) and request.headers.get("HX-Target") == "record-list"


def _display_form(request: HtmxHttpRequest, defaulted: bool) -> forms.RecordFilterForm:
    """The filter form as the page draws it: the default period shown as selected."""
    if not defaulted:
        return forms.RecordFilterForm(request.GET)
    data = request.GET.copy()
    data["range"] = explorer.DEFAULT_RANGE
    return forms.RecordFilterForm(data)


@require_GET
@role_required(Role.AUDITOR)
def suggest(request: HtmxHttpRequest, field: str) -> HttpResponse:
    """`<option>`s for the tool or hook prefix input's datalist, for what is typed so far."""
    options: list[explorer.FacetValue] = []
    if field == "hook":
        options = explorer.hook_suggestions(request.GET.get("hook_prefix", ""))
    elif field == "tool":
        now = explorer.now_utc()
        params = request.GET.copy()
        for name in ("tool_prefix", "tool_name", "cursor"):
            params.pop(name, None)
        effective, defaulted = explorer.explorer_params(params)
        try:
            period = explorer.explorer_period(effective, now=now, defaulted=defaulted)
            qs = selectors.records_search(effective, user=request.user, now=now)
            prefix = request.GET.get("tool_prefix", "").strip()[:200]
            options = explorer.tool_suggestions(qs, prefix, now=now, since=period.since)
        except InvalidInput:
            options = []
    return render(request, "audit/records.html#suggestions", {"options": options})


@require_POST
@role_required(Role.AUDITOR)
def saved_view_create(request: HtmxHttpRequest) -> HttpResponse:
    query = request.POST.get("query", "")
    try:
        view = saved_views.saved_view_create(
            owner=request.user, name=request.POST.get("name", ""), query=query
        )
    except DomainError as exc:
        if not request.htmx:
            raise
        context = _saved_context(request, query, exc)
        return render(request, "audit/records.html#saved_views", context)
    if request.htmx:
        context = {**_saved_context(request, query), "saved_now": view}
        return render(request, "audit/records.html#saved_views", context)
    messages.success(request, f"Saved view “{view.name}”.")
    return HttpResponseRedirect(saved_views.saved_view_url(view))


@require_POST
@role_required(Role.AUDITOR)
def saved_view_delete(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    query = request.POST.get("query", "")
    saved_views.saved_view_delete(owner=request.user, pk=pk)
    if request.htmx:
        return render(request, "audit/records.html#saved_views", _saved_context(request, query))
    path = forms.search_url()
    return HttpResponseRedirect(f"{path}?{saved_views.clean_query(query)}" if query else path)
