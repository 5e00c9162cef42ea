"""Reads of the record explorer (/audit/): the period, the histogram, the facets and the
tool/hook suggestions, all over a `records_filter` queryset (the one filter).

Every query here is bounded: the explorer page always has a period (`range=24h` when the
URL names none), the histogram is one GROUP BY over the period's rows (`date_bin` on
PostgreSQL, epoch arithmetic on SQLite), each facet one GROUP BY … LIMIT, and the
suggestions read at most `SUGGEST_WINDOW` of records. The total is the sum of the
histogram's buckets, so it is exact and costs no extra query.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import BigIntegerField, Count, DateTimeField, Func, QuerySet, Value
from django.db.models.functions import Lower
from django.utils import timezone

from agents.selectors import hook_names, hooks_with_prefix
from audit.models import InterceptionRecord
from audit.selectors import ALL_TIME, clean_filters, time_bounds
from console import embedded

DEFAULT_RANGE = "24h"
# Bucket sizes the histogram picks from (seconds, label): the smallest that draws the
# period in at most MAX_BARS bars.
BUCKETS: tuple[tuple[int, str], ...] = (
    (60, "1 minute"),
    (120, "2 minutes"),
    (300, "5 minutes"),
    (600, "10 minutes"),
    (900, "15 minutes"),
    (1800, "30 minutes"),
    (3600, "1 hour"),
    (7200, "2 hours"),
    (10800, "3 hours"),
    (21600, "6 hours"),
    (43200, "12 hours"),
    (86400, "1 day"),
    (172800, "2 days"),
    (604800, "7 days"),
    (2592000, "30 days"),
)
MAX_BARS = 120
# Buckets are aligned to this instant (a Monday, midnight UTC): days start at midnight UTC,
# weeks on Mondays.
ORIGIN = dt.datetime(2001, 1, 1, tzinfo=dt.UTC)
FACET_LIMIT = 8
# (filter name, label, column): the facets of the sidebar, in order.
FACETS: tuple[tuple[str, str, str], ...] = (
    ("agent", "Agent", "agent__slug"),
    ("custom_agent", "Custom agent", "custom_agent"),
    ("outcome", "Outcome", "outcome"),
    ("hook", "Hook", "hook_ids"),
    ("tool_name", "Tool", "tool_name"),
    ("framework", "Framework", "framework"),
)
SUGGEST_LIMIT = 15
SUGGEST_WINDOW = dt.timedelta(days=30)


@dataclass(frozen=True)
class Period:
    """The explorer's period: `since` inclusive, `until` exclusive (None: open, up to now)."""

    since: dt.datetime | None
    until: dt.datetime | None
    range: str  # the relative range in force ("24h", "all"), "" for since/until
    defaulted: bool  # the URL named no period: DEFAULT_RANGE applies


def explorer_params(params: Mapping[str, Any]) -> tuple[dict[str, str], bool]:
    """The request's filters, with `range=DEFAULT_RANGE` when it names no period, and
    whether that default was added."""
    filters = clean_filters(params)
    if not {"range", "since", "until"} & filters.keys():
        return {**filters, "range": DEFAULT_RANGE}, True
    return filters, False


def explorer_period(filters: Mapping[str, str], *, now: dt.datetime, defaulted: bool) -> Period:
    since, until = time_bounds(filters, now=now)
    return Period(since=since, until=until, range=filters.get("range", ""), defaulted=defaulted)


def bucket_for(span: dt.timedelta) -> tuple[int, str]:
    """(seconds, label) of the smallest bucket drawing `span` in at most MAX_BARS bars."""
    seconds = max(span.total_seconds(), 1.0)
    for size, label in BUCKETS:
        if math.ceil(seconds / size) <= MAX_BARS:
            return size, label
    return BUCKETS[-1]


def _floor(at: dt.datetime, size: int) -> dt.datetime:
    offset = (at - ORIGIN).total_seconds()
    return ORIGIN + dt.timedelta(seconds=math.floor(offset / size) * size)


class _DateBin(Func):
    """PostgreSQL's date_bin(interval, timestamp, origin): the start of the bucket."""

    function = "date_bin"
    output_field = DateTimeField()


class _EpochBucket(Func):
    """SQLite: the bucket's index, floor((epoch seconds - origin) / size)."""

    output_field = BigIntegerField()

    def __init__(self, expression: Any, *, origin: int, size: int) -> None:
        super().__init__(expression)
        self.origin, self.size = origin, size

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:  # type: ignore[override]
        column, params = compiler.compile(self.source_expressions[0])
        offset = f"(CAST(strftime('%%s', {column}) AS INTEGER) - {int(self.origin)})"
        size = int(self.size)
        # SQLite's % keeps the dividend's sign: this floors for instants before the origin.
        return f"(({offset}) - ((({offset}) %% {size}) + {size}) %% {size}) / {size}", [
            *params,
            *params,
            *params,
        ]


@dataclass
class Histogram:
    bucket_seconds: int
    bucket_label: str
    start: dt.datetime
    end: dt.datetime
    counts: list[int]
    total: int
    later: int = 0  # records timestamped after `end` (clocks ahead of the console's)
    starts: list[dt.datetime] = field(default_factory=list)


def earliest(qs: QuerySet[InterceptionRecord]) -> dt.datetime | None:
    """The oldest timestamp of the filter (the start of an all-time histogram)."""
    return qs.order_by("timestamp", "id").values_list("timestamp", flat=True).first()


def histogram(
    qs: QuerySet[InterceptionRecord], period: Period, *, now: dt.datetime
) -> Histogram | None:
    """Counts per bucket of the filtered records over the period; None when the period
    has no start (all time) and no record matches."""
    start = period.since or earliest(qs)
    if start is None:
        return None
    end = period.until or now
    if end <= start:
        end = start + dt.timedelta(minutes=1)
    size, label = bucket_for(end - start)
    first = _floor(start, size)
    bars = max(1, math.ceil((end - first).total_seconds() / size))
    counts = [0] * bars
    later = 0
    for at, n in _bucket_counts(qs, size):
        index = math.floor((at - first).total_seconds() / size)
        if index >= bars:
            later += n
        elif index >= 0:
            counts[index] += n
    starts = [first + dt.timedelta(seconds=size * i) for i in range(bars)]
    return Histogram(
        bucket_seconds=size,
        bucket_label=label,
        start=first,
        end=first + dt.timedelta(seconds=size * bars),
        counts=counts,
        total=sum(counts) + later,
        later=later,
        starts=starts,
    )


def _bucket_counts(qs: QuerySet[InterceptionRecord], size: int) -> list[tuple[dt.datetime, int]]:
    plain = qs.order_by()
    if embedded.database_is_postgresql(connection):
        binned = _DateBin(
            Value(dt.timedelta(seconds=size)), "timestamp", Value(ORIGIN), output_field=DateTimeField()
        )
        rows = plain.annotate(bucket=binned).values("bucket").annotate(n=Count("id"))
        return [(row["bucket"], row["n"]) for row in rows]
    origin = int(ORIGIN.timestamp())
    index = _EpochBucket("timestamp", origin=origin, size=size)
    rows = plain.annotate(bucket=index).values("bucket").annotate(n=Count("id"))
    return [(ORIGIN + dt.timedelta(seconds=size * row["bucket"]), row["n"]) for row in rows]


@dataclass(frozen=True)
class FacetValue:
    value: str
    label: str
    count: int


@dataclass(frozen=True)
class Facet:
    name: str  # the filter it sets
    label: str
    values: list[FacetValue]


def facets(qs: QuerySet[InterceptionRecord], *, limit: int = FACET_LIMIT) -> list[Facet]:
    """The top `limit` values of each facet over the filtered records, most frequent
    first (empty values left out), one GROUP BY … LIMIT each."""
    plain = qs.order_by()
    result = []
    for name, label, column in FACETS:
        if column == "hook_ids":
            values = _hook_facet(plain, limit)
        else:
            rows = (
                plain.exclude(**{column: ""})
                .values_list(column)
                .annotate(n=Count("id"))
                .order_by("-n", column)[:limit]
            )
            values = [FacetValue(value=v, label=v, count=n) for v, n in rows]
        result.append(Facet(name=name, label=label, values=values))
    return result


def _hook_facet(qs: QuerySet[InterceptionRecord], limit: int) -> list[FacetValue]:
    if qs.query.is_empty():
        return []
    inner, params = qs.values("hook_ids").query.sql_with_params()
    if embedded.database_is_postgresql(connection):
        sql = (
            f"SELECT h, count(*) AS n FROM ({inner}) AS r "  # noqa: S608 - compiled queryset
            "CROSS JOIN LATERAL unnest(r.hook_ids) AS h GROUP BY h ORDER BY n DESC, h LIMIT %s"
        )
    else:
        sql = (
            f"SELECT j.value, count(*) AS n FROM ({inner}) AS r, json_each(r.hook_ids) AS j "  # noqa: S608
            "GROUP BY j.value ORDER BY n DESC, j.value LIMIT %s"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        rows = [(str(key), int(n)) for key, n in cursor.fetchall()]
    names = hook_names(key for key, _ in rows)
    return [FacetValue(value=key, label=names.get(key, key), count=n) for key, n in rows]


def tool_suggestions(
    qs: QuerySet[InterceptionRecord], prefix: str, *, now: dt.datetime, since: dt.datetime | None
) -> list[FacetValue]:
    """The most frequent tool names starting with `prefix` (case-insensitive) among the
    filtered records of at most the last SUGGEST_WINDOW."""
    floor = now - SUGGEST_WINDOW
    window = qs.order_by().filter(timestamp__gte=max(since, floor) if since else floor)
    if prefix:
        window = window.alias(tool_lower=Lower("tool_name")).filter(
            tool_lower__startswith=prefix.lower()
        )
    rows = (
        window.exclude(tool_name="")
        .values_list("tool_name")
        .annotate(n=Count("id"))
        .order_by("-n", "tool_name")[:SUGGEST_LIMIT]
    )
    return [FacetValue(value=v, label=v, count=n) for v, n in rows]


def hook_suggestions(prefix: str) -> list[FacetValue]:
    """Configured hooks whose name starts with `prefix` (case-insensitive)."""
    seen: dict[str, FacetValue] = {}
    for name, agent in hooks_with_prefix(prefix, limit=SUGGEST_LIMIT * 2):
        if name.lower() not in seen:
            seen[name.lower()] = FacetValue(value=name, label=f"{name} ({agent})", count=0)
    return list(seen.values())[:SUGGEST_LIMIT]


def is_all_time(period: Period) -> bool:
    return period.range == ALL_TIME


def now_utc() -> dt.datetime:
    return timezone.now().astimezone(dt.UTC)
