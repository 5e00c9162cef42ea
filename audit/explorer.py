"""Reads of the record explorer (/audit/): the period, the histogram, the facets and the
tool/hook suggestions, all over a `records_filter` queryset (the one filter).

Every query here is bounded: the explorer page always has a period (`range=24h` when the
URL names none). The histogram is one GROUP BY (`date_bin` on PostgreSQL, epoch
arithmetic on SQLite). The facets count at most the newest FACET_ROWS matches: on
PostgreSQL ONE statement reads them once (the facet columns as GROUPING SETS, the hooks by
`unnest`, over a MATERIALIZED CTE), on SQLite one GROUP BY each. Facets keep their top
FACET_LIMIT values; the suggestions read at most `SUGGEST_WINDOW` of records. The total is the sum of the histogram's buckets, so it is
exact and costs no extra query.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connections
from django.db.models import BigIntegerField, Count, DateTimeField, Func, QuerySet, Value
from django.db.models.functions import Lower
from django.utils import timezone

from agents.selectors import agent_slugs_by_id, hook_names, hooks_with_prefix
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
# Facets count at most the newest FACET_ROWS matches of the period (the histogram and the
# total always count all of them): a 30-day period of a busy table stays one bounded read.
FACET_ROWS = 10_000
# (filter name, label, column): the facets of the sidebar, in order.
FACETS: tuple[tuple[str, str, str], ...] = (
    ("agent", "Agent", "agent_id"),
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
        sql = f"(({offset}) - ((({offset}) %% {size}) + {size}) %% {size}) / {size}"
        return sql, [*params, *params, *params]


@dataclass
class Histogram:
    bucket_seconds: int
    bucket_label: str
    start: dt.datetime
    end: dt.datetime
    counts: list[int]
    total: int
    later: int = 0  # records timestamped after `end` (clocks ahead of the console's)
    facet_rows: int = 0  # the rows the facets counted: total, or the newest FACET_ROWS
    starts: list[dt.datetime] = field(default_factory=list)


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


def earliest(qs: QuerySet[InterceptionRecord]) -> dt.datetime | None:
    """The oldest timestamp of the filter (the start of an all-time histogram)."""
    return qs.order_by("timestamp", "id").values_list("timestamp", flat=True).first()


def overview(
    qs: QuerySet[InterceptionRecord], period: Period, *, now: dt.datetime, limit: int = FACET_LIMIT
) -> tuple[Histogram | None, list[Facet]]:
    """The histogram (None when the period has no start, i.e. all time, and no record
    matches) and the facets of the filtered records: the buckets are one GROUP BY (an
    index-only scan when only the period filters), the facets count the newest FACET_ROWS
    matches at most, on PostgreSQL in one statement, elsewhere one GROUP BY each."""
    start = period.since or earliest(qs)
    if start is None:
        return None, _facets({})
    end = period.until or now
    if end <= start:
        end = start + dt.timedelta(minutes=1)
    size, label = bucket_for(end - start)
    buckets: list[tuple[dt.datetime, int]] = []
    found: dict[str, list[tuple[str, int]]] = {}
    rows = 0
    if not qs.query.is_empty():
        buckets = _bucket_counts(qs, size)
        matched = sum(n for _, n in buckets)
        rows = min(matched, FACET_ROWS)
        sampled = matched > FACET_ROWS
        if embedded.database_is_postgresql(connections[qs.db]):
            found = _pg_facets(qs, limit, rows=FACET_ROWS if sampled else None)
        else:
            if sampled:
                newest = qs.order_by("-timestamp", "-id").values("pk")[:FACET_ROWS]
                qs = qs.filter(pk__in=newest)
            found = {name: _column_facet(qs, column, limit) for name, _, column in FACETS}
    first = _floor(start, size)
    bars = max(1, math.ceil((end - first).total_seconds() / size))
    counts = [0] * bars
    later = 0
    for at, n in buckets:
        index = math.floor((at - first).total_seconds() / size)
        if index >= bars:
            later += n
        elif index >= 0:
            counts[index] += n
    hist = Histogram(
        bucket_seconds=size,
        bucket_label=label,
        start=first,
        end=first + dt.timedelta(seconds=size * bars),
        counts=counts,
        total=sum(counts) + later,
        later=later,
        facet_rows=rows,
        starts=[first + dt.timedelta(seconds=size * i) for i in range(bars)],
    )
    return hist, _facets(found)


def _facets(found: Mapping[str, list[tuple[str, int]]]) -> list[Facet]:
    hooks = hook_names(key for key, _ in found.get("hook", []))
    agents = agent_slugs_by_id(int(v) for v, _ in found.get("agent", []))
    result = []
    for name, label, _ in FACETS:
        values = []
        for raw, n in found.get(name, []):
            value = agents.get(int(raw), raw) if name == "agent" else raw
            shown = hooks.get(value, value) if name == "hook" else value
            values.append(FacetValue(value=value, label=shown, count=n))
        result.append(Facet(name=name, label=label, values=values))
    return result


def _bucket_counts(qs: QuerySet[InterceptionRecord], size: int) -> list[tuple[dt.datetime, int]]:
    if embedded.database_is_postgresql(connections[qs.db]):
        binned = _DateBin(Value(f"{size} seconds"), "timestamp", Value(ORIGIN))
        by_bin = qs.order_by().annotate(bucket=binned).values("bucket").annotate(n=Count("id"))
        return [(row["bucket"], row["n"]) for row in by_bin]
    origin = int(ORIGIN.timestamp())
    index = _EpochBucket("timestamp", origin=origin, size=size)
    rows = qs.order_by().annotate(bucket=index).values("bucket").annotate(n=Count("id"))
    return [(ORIGIN + dt.timedelta(seconds=size * row["bucket"]), row["n"]) for row in rows]


def _column_facet(
    qs: QuerySet[InterceptionRecord], column: str, limit: int
) -> list[tuple[str, int]]:
    plain = qs.order_by()
    if column == "hook_ids":
        return _hook_facet(plain, limit)
    if column != "agent_id":
        plain = plain.exclude(**{column: ""})
    rows = plain.values_list(column).annotate(n=Count("id")).order_by("-n", column)[:limit]
    return [(str(v), n) for v, n in rows]


def _hook_facet(qs: QuerySet[InterceptionRecord], limit: int) -> list[tuple[str, int]]:
    inner, params = qs.values("hook_ids").query.sql_with_params()
    sql = (
        f"SELECT j.value, count(*) AS n FROM ({inner}) AS r, json_each(r.hook_ids) AS j "  # noqa: S608 - compiled queryset
        "GROUP BY j.value ORDER BY n DESC, j.value LIMIT %s"
    )
    with connections[qs.db].cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return [(str(key), int(n)) for key, n in cursor.fetchall()]


_COLUMNS = ("agent_id", "custom_agent", "outcome", "tool_name", "framework")


def _pg_facets(
    qs: QuerySet[InterceptionRecord], limit: int, *, rows: int | None
) -> dict[str, list[tuple[str, int]]]:
    """The facets in one statement: the filtered rows (the newest `rows` when given) are
    read once into a MATERIALIZED CTE; GROUPING SETS count the five column facets,
    `unnest` the hooks; a window keeps each facet's top `limit`."""
    if rows is None:
        selected = qs.order_by().values(*_COLUMNS, "hook_ids")
    else:
        selected = qs.order_by("-timestamp", "-id").values(*_COLUMNS, "hook_ids")[:rows]
    inner, params = selected.query.sql_with_params()
    names = {"agent_id": "agent", **{c: c for c in _COLUMNS[1:]}}
    which = " ".join(f"WHEN GROUPING(r.{c}) = 0 THEN '{names[c]}'" for c in _COLUMNS)
    value = " ".join(f"WHEN GROUPING(r.{c}) = 0 THEN r.{c}::text" for c in _COLUMNS)
    sets = ", ".join(f"(r.{c})" for c in _COLUMNS)
    columns = ", ".join(f"q.{c}" for c in _COLUMNS)
    # Every name interpolated here is a fixed column of this module; the compiled filter
    # and the limits are parameters.
    sql = f"""
        WITH r AS MATERIALIZED (SELECT {columns}, q.hook_ids FROM ({inner}) AS q),
        g AS (
            SELECT CASE {which} END AS facet, CASE {value} END AS value, count(*) AS n
            FROM r GROUP BY GROUPING SETS ({sets})
        ), ranked AS (
            SELECT facet, value, n,
                   row_number() OVER (PARTITION BY facet ORDER BY n DESC, value) AS position
            FROM g WHERE value <> ''
        )
        SELECT facet, value, n FROM ranked WHERE position <= %s
        UNION ALL
        SELECT * FROM (
            SELECT 'hook', h, count(*) FROM r CROSS JOIN LATERAL unnest(r.hook_ids) AS h
            GROUP BY h ORDER BY count(*) DESC, h LIMIT %s
        ) AS hooks
    """  # noqa: S608
    with connections[qs.db].cursor() as cursor:
        cursor.execute(sql, [*params, limit, limit])
        fetched = cursor.fetchall()
    found: dict[str, list[tuple[str, int]]] = {}
    for facet, raw, n in fetched:
        found.setdefault(facet, []).append((str(raw), int(n)))
    for values in found.values():
        values.sort(key=lambda item: (-item[1], item[0]))
    return found


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
