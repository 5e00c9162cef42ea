"""The dashboard's reviewer-wait card: escalation created → decided, p50/p95 per bar of
the dashboard's range and overall (escalations, not records: a small table)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Func, Value
from django.db.models.aggregates import Aggregate
from django.db.models.fields import DateTimeField, DurationField
from django.db.models.functions import Extract

from approvals.history_selectors import decision_window
from console import embedded


class _PercentileCont(Aggregate):
    """PostgreSQL `percentile_cont(p) WITHIN GROUP (ORDER BY expr)`."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        super().__init__(expression, fraction=f"{float(fraction):.4f}", **extra)


class _DateBin(Func):
    """PostgreSQL `date_bin(stride, source, origin)`."""

    function = "date_bin"
    output_field = DateTimeField()


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks, as percentile_cont does."""
    position = (len(sorted_values) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclass(frozen=True)
class WaitStats:
    """Reviewer wait (seconds) per bar start and overall."""

    by_bar: dict[dt.datetime, tuple[float, float, int]]
    p50: float | None
    p95: float | None
    decided: int
    pending: int


def reviewer_wait(*, since: dt.datetime, bar: dt.timedelta, agent_slug: str | None) -> WaitStats:
    """p50/p95 of the reviewer wait over escalations created from `since` on and decided,
    per bar (bars start at `since`). PostgreSQL computes percentiles in SQL; on the
    embedded SQLite default (demo sizes) the durations are ranked in Python."""
    window = decision_window(since=since, until=None, agent_slug=agent_slug)
    decided, pending = window.decided, window.pending
    if embedded.database_is_postgresql():
        wait = Extract(F("decided_at") - F("created_at"), "epoch")
        overall = decided.aggregate(
            p50=_PercentileCont(wait, 0.5), p95=_PercentileCont(wait, 0.95), n=Count("id")
        )
        stride = Value(bar, output_field=DurationField())
        per_bar = (
            decided.annotate(bar=_DateBin(stride, F("created_at"), Value(since)))
            .values("bar")
            .annotate(
                p50=_PercentileCont(wait, 0.5), p95=_PercentileCont(wait, 0.95), n=Count("id")
            )
        )
        by_bar = {row["bar"]: (row["p50"], row["p95"], row["n"]) for row in per_bar}
        return WaitStats(by_bar, overall["p50"], overall["p95"], overall["n"], pending)
    grouped: dict[dt.datetime, list[float]] = {}
    for created, decided_at in decided.values_list("created_at", "decided_at"):
        if decided_at is None:  # excluded by the filter; keeps the types honest
            continue
        start = since + bar * ((created - since) // bar)
        grouped.setdefault(start, []).append((decided_at - created).total_seconds())
    everything = sorted(v for values in grouped.values() for v in values)
    by_bar = {}
    for start, values in grouped.items():
        values.sort()
        by_bar[start] = (_percentile(values, 0.5), _percentile(values, 0.95), len(values))
    if not everything:
        return WaitStats(by_bar, None, None, 0, pending)
    return WaitStats(
        by_bar,
        _percentile(everything, 0.5),
        _percentile(everything, 0.95),
        len(everything),
        pending,
    )
