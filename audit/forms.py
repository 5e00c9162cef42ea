"""The audit pages' filters: forms that parse the query string, and the filter as a URL.

The forms only parse: each filter is text, stripped, kept when not empty. Whether a value
is acceptable is decided by `audit.selectors.records_filter` / `governance_events_filter`,
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

from audit import selectors
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
    names = selectors.governance_actions()
    prefixes = sorted({a.split(".", 1)[0] + "." for a in names if "." in a})
    return [(p, f"{p}* (all)") for p in prefixes] + [(a, a) for a in names]


def _actors() -> list[tuple[str, str]]:
    return [(label, label) for label in selectors.governance_actor_labels()]


class RecordFilterForm(FilterForm):
    names = RECORD_FILTERS

    agent = FilterField("Agent", "agent", choices=_agents)
    outcome = FilterField("Outcome", "choice", choices=_fixed("outcome"))
    interception_point = FilterField(
        "Interception point", "choice", choices=_fixed("interception_point")
    )
    tool_name = FilterField("Tool name", "text", "e.g. ExecuteShellCommand")
    q = FilterField("Reason text", "search", "contains…")
    since = FilterField("Since", "text", "2026-01-31")
    until = FilterField("Until", "text", "2026-02-01T09:00Z")
    custom_agent = FilterField("Custom agent", "text", "e.g. my_hooked_agent", advanced=True)
    session_id = FilterField("Session", "text", "session id", advanced=True)
    decision = FilterField("Decision", "choice", advanced=True, choices=_fixed("decision"))
    hook = FilterField("Hook", "text", "name or hk_…", advanced=True)
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


def quick_ranges(path: str, filters: Mapping[str, str]) -> list[dict[str, str]]:
    now = timezone.now().astimezone(dt.UTC).replace(microsecond=0, second=0)
    rest = {k: v for k, v in filters.items() if k not in ("since", "until")}
    ranges = (
        ("Last hour", dt.timedelta(hours=1)),
        ("24 h", dt.timedelta(days=1)),
        ("7 days", dt.timedelta(days=7)),
        ("30 days", dt.timedelta(days=30)),
    )
    result = [
        {"label": label, "url": query_url(path, {**rest, "since": (now - delta).isoformat()})}
        for label, delta in ranges
    ]
    result.append({"label": "All time", "url": query_url(path, rest)})
    return result
