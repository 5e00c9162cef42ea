"""The audit pages' filters: forms that parse the query string, and the filter as a URL.

The forms only parse: each filter is text, stripped, kept when not empty. Whether a value
is acceptable is decided by `audit.selectors.records_filter` / `audit.governance_selectors.governance_events_filter`,
the one filter implementation the API and the export use too, so a bad value gets the
same message everywhere (the page shows it above the results). The forms also carry what
`audit/_filter_fields.html` draws: the kind of input, its placeholder, its options.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone

from audit import charts, explorer, governance_selectors, selectors
from audit.selectors import FILTER_CHOICES, GOVERNANCE_FILTERS, RECORD_FILTERS

EXPORT_URL_NAME = "api-records-export"
GOVERNANCE_EXPORT_URL_NAME = "api-governance-events-export"
EXPORT_FORMATS = (("csv", "CSV"), ("jsonl", "JSONL"))
SESSIONS_DEFAULT_DAYS = 7
SESSION_FILTERS = ("agent", "custom_agent", "since", "until")

Choices = Callable[[], Sequence[tuple[str, str]]]


class FilterBoundField(forms.BoundField):
    """One filter as the template draws it: `kind` (agent, choice, action: a select;
    actor: text with suggestions; search; text), `placeholder`, `advanced` (behind "More
    filters"), `choices` and the parsed `value`."""

    field: FilterField
    form: FilterForm

    @property
    def kind(self) -> str:
        return self.field.kind

    @property
    def placeholder(self) -> str:
        return self.field.placeholder

    @property
    def advanced(self) -> bool:
        return self.field.advanced

    @cached_property
    def choices(self) -> Sequence[tuple[str, str]]:
        """The field's options, plus the URL's value when it is none of them (several
        comma-separated outcomes, as the dashboard's "blocked" links use)."""
        options = tuple(self.field.options())
        value = self.value()
        if self.kind == "choice" and value and value not in (key for key, _label in options):
            options += ((value, value.replace(",", ", ")),)
        return options

    def value(self) -> str:
        return self.form.filters.get(self.name, "")


class FilterField(forms.CharField):
    """A filter's text, stripped; validated by the selector, not here."""

    bound_field_class = FilterBoundField

    def __init__(
        self,
        label: str,
        kind: str = "text",
        placeholder: str = "",
        *,
        advanced: bool = False,
        choices: Choices | None = None,
    ) -> None:
        super().__init__(label=label, required=False)
        self.kind = kind
        self.placeholder = placeholder
        self.advanced = advanced
        self.options: Choices = choices or tuple


class FilterForm(forms.Form):
    """A GET filter form; `filters` are the non-empty values in `names` order (the order
    of the shareable URL)."""

    names: tuple[str, ...] = ()

    @cached_property
    def filters(self) -> dict[str, str]:
        data = self.cleaned_data if self.is_valid() else {}
        return {name: data[name] for name in self.names if data.get(name)}

    @property
    def advanced_open(self) -> bool:
        """Open the "More filters" box when one of its filters is set."""
        return any(
            isinstance(field, FilterField) and field.advanced and name in self.filters
            for name, field in self.fields.items()
        )


def _fixed(name: str) -> Choices:
    return lambda: FILTER_CHOICES[name]


def _agents() -> list[tuple[str, str]]:
    return [(slug, slug) for slug in selectors.agent_slugs()]


def _actions() -> list[tuple[str, str]]:
    """Each action, after one "prefix.* (all)" option per family of actions."""
    names = governance_selectors.governance_actions()
    prefixes = sorted({a.split(".", 1)[0] + "." for a in names if "." in a})
    return [(p, f"{p}* (all)") for p in prefixes] + [(a, a) for a in names]


def _actors() -> list[tuple[str, str]]:
    return [(label, label) for label in governance_selectors.governance_actor_labels()]


RANGE_CHOICES: list[tuple[str, str]] = [
    ("15m", "Last 15 minutes"),
    ("1h", "Last hour"),
    ("24h", "Last 24 hours"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
    ("all", "All time"),
]


class RecordFilterForm(FilterForm):
    names = RECORD_FILTERS

    range = FilterField("Period", "range", choices=lambda: RANGE_CHOICES)
    since = FilterField("Since", "text", "2026-01-31")
    until = FilterField("Until", "text", "2026-02-01T09:00Z")
    agent = FilterField("Agent", "agent", choices=_agents)
    outcome = FilterField("Outcome", "choice", choices=_fixed("outcome"))
    tool_prefix = FilterField("Tool starts with", "suggest", "e.g. exec")
    hook_prefix = FilterField("Hook starts with", "suggest", "hook name")
    q = FilterField("Reason text", "search", "contains…")
    interception_point = FilterField(
        "Interception point", "choice", advanced=True, choices=_fixed("interception_point")
    )
    tool_name = FilterField("Tool name (exact)", "text", "e.g. ExecuteShellCommand", advanced=True)
    hook = FilterField("Hook (exact)", "text", "name or hk_…", advanced=True)
    custom_agent = FilterField("Custom agent", "text", "e.g. my_hooked_agent", advanced=True)
    framework = FilterField("Framework", "text", "e.g. agent_framework", advanced=True)
    session_id = FilterField("Session", "text", "session id", advanced=True)
    decision = FilterField("Decision", "choice", advanced=True, choices=_fixed("decision"))
    mode = FilterField("Mode", "choice", advanced=True, choices=_fixed("mode"))
    reason = FilterField("Reason code", "text", "exact, e.g. dangerous_command", advanced=True)
    decided_hook = FilterField("Deciding hook", "text", "exact hook key hk_…", advanced=True)


class EventFilterForm(FilterForm):
    names = GOVERNANCE_FILTERS

    action = FilterField("Action", "action", choices=_actions)
    actor = FilterField("Actor", "actor", "exact name", choices=_actors)
    agent = FilterField("Agent", "agent", choices=_agents)
    q = FilterField("Text", "search", "summary contains…")
    since = FilterField("Since", "text", "2026-01-31")
    until = FilterField("Until", "text", "exclusive")


def with_default_since(params: QueryDict, *, days: int) -> QueryDict:
    """The request's filters, with `since` = `days` ago when the URL sets no period."""
    result = params.copy()
    if not result.get("since") and not result.get("until"):
        start = timezone.now().astimezone(dt.UTC).date() - dt.timedelta(days=days)
        result["since"] = start.isoformat()
    return result


# --- the filter as a URL ------------------------------------------------------------------


def query_url(path: str, filters: Mapping[str, str], **extra: str | None) -> str:
    """`path?filters&extra` with empty values dropped: the shareable form of a view."""
    params = {k: v for k, v in {**filters, **extra}.items() if v}
    return f"{path}?{urlencode(params)}" if params else path


def search_url(**filters: Any) -> str:
    return query_url(reverse("audit:records"), {k: str(v) for k, v in filters.items() if v})


def export_links(
    filters: Mapping[str, str],
    *,
    url_name: str = EXPORT_URL_NAME,
    names: tuple[str, ...] = RECORD_FILTERS,
) -> list[dict[str, str]]:
    """The API export of exactly the filter on screen (cursor and limit are not filters):
    records by default, governance events with `GOVERNANCE_EXPORT_URL_NAME` and
    `GOVERNANCE_FILTERS`."""
    clean = {k: v for k, v in filters.items() if k in names}
    return [
        {
            "format": fmt,
            "label": label,
            "url": query_url(reverse(url_name), {"format": fmt, **clean}),
        }
        for fmt, label in EXPORT_FORMATS
    ]


# --- the explorer's links: facets, active filters, histogram bars ------------------------

PERIOD_NAMES = ("range", "since", "until")
# Filters a facet or chip replaces along with its own (an exact value drops the prefix).
_REPLACES = {"tool_name": ("tool_prefix",), "hook": ("hook_prefix",)}
CHIP_LABELS = {
    "tool_prefix": "tool starts with",
    "hook_prefix": "hook starts with",
    "tool_name": "tool",
    "custom_agent": "custom agent",
    "session_id": "session",
    "interception_point": "point",
    "q": "reason contains",
}


def facet_rows(
    path: str, filters: Mapping[str, str], found: Sequence[explorer.Facet]
) -> list[dict[str, Any]]:
    """Each facet with its values as links: a value adds its filter (replacing that filter's
    other value, and the prefix an exact value makes moot); the active value removes it."""
    rows = []
    for facet in found:
        values = []
        for item in facet.values:
            active = filters.get(facet.name) == item.value
            rest = {
                k: v
                for k, v in filters.items()
                if k != facet.name and k not in _REPLACES.get(facet.name, ())
            }
            url = query_url(path, rest if active else {**rest, facet.name: item.value})
            values.append({"item": item, "active": active, "url": url})
        rows.append({"facet": facet, "values": values})
    return rows


def active_chips(
    path: str, filters: Mapping[str, str], labels: Mapping[str, str]
) -> list[dict[str, str]]:
    """The filters in force other than the period, each with the URL without it."""
    return [
        {
            "name": name,
            "label": CHIP_LABELS.get(name, name.replace("_", " ")),
            "value": labels.get(value, value) if name == "hook" else value,
            "url": query_url(path, {k: v for k, v in filters.items() if k != name}),
        }
        for name, value in filters.items()
        if name not in PERIOD_NAMES
    ]


def _instant(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


# Spacing of the time axis' labels: the first of these (a multiple of the bucket) that
# leaves at most 8 labels.
_LABEL_STEPS = (300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


def histogram_svg(path: str, filters: Mapping[str, str], hist: explorer.Histogram) -> Any:
    """The histogram as SVG: each bar links to its bucket as an absolute since/until."""
    rest = {k: v for k, v in filters.items() if k not in PERIOD_NAMES}
    size = hist.bucket_seconds
    span = size * len(hist.counts)
    label_step = next(
        (s for s in _LABEL_STEPS if s % size == 0 and span / s <= 8),
        size * max(1, len(hist.counts) // 8),
    )
    with_day = span > 86400 or hist.starts[0].date() != hist.starts[-1].date()
    axis = []
    for at in hist.starts:
        offset = int((at - explorer.ORIGIN).total_seconds())
        if offset % label_step:
            axis.append("")
        elif size >= 86400:
            axis.append(at.strftime("%b %-d"))
        elif with_day and (at.hour, at.minute) == (0, 0) or at == hist.starts[0] and with_day:
            axis.append(at.strftime("%b %-d %H:%M"))
        else:
            axis.append(at.strftime("%H:%M"))
    step = dt.timedelta(seconds=size)
    fmt = "%Y-%m-%d" if size >= 86400 else "%Y-%m-%d %H:%M"
    labels = [f"{at.strftime(fmt)} UTC, {hist.bucket_label}" for at in hist.starts]
    links = [
        query_url(path, {**rest, "since": _instant(at), "until": _instant(at + step)})
        for at in hist.starts
    ]
    return charts.histogram(
        counts=hist.counts,
        labels=labels,
        links=links,
        axis_labels=axis,
        label=f"Records per {hist.bucket_label}, {_fmt_count(hist.total)} in all",
    )


def _fmt_count(n: int) -> str:
    return f"{n:,} record{'' if n == 1 else 's'}"
