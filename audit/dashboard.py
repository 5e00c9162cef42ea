"""The audit dashboard: its aggregate reads (GROUP BY in the database) and its charts.

Every read takes a record queryset already narrowed by `audit.selectors.records_filter`
(the one filter implementation), so the dashboard's agent/period choices mean what they mean
on the search page, and returns plain numbers; `dashboard_charts` has `audit.charts` draw
them and links each bar to the record search that shows its records.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.db.models.aggregates import Aggregate
from django.db.models.fields.json import KT
from django.db.models.functions import Extract, TruncDate

from agents.models import Agent, Hook, Mode
from approvals.selectors import decision_window
from audit import charts
from audit.forms import search_url
from audit.models import InterceptionPoint, InterceptionRecord, Outcome
from console import embedded

BLOCKING_OUTCOMES = (Outcome.DENIED, Outcome.REJECTED, Outcome.EXPIRED)
TOP_N = 10
DASHBOARD_DAY_CHOICES = (7, 14, 30, 90)
DASHBOARD_DEFAULT_DAYS = 14
NARROW_CHART_WIDTH = 400


def dashboard_days(raw: str | None) -> int:
    """The `?days=` period: one of DASHBOARD_DAY_CHOICES, else the default."""
    try:
        value = int(raw or DASHBOARD_DEFAULT_DAYS)
    except ValueError:
        return DASHBOARD_DEFAULT_DAYS
    return value if value in DASHBOARD_DAY_CHOICES else DASHBOARD_DEFAULT_DAYS


def days_between(since: dt.date, until: dt.date) -> list[dt.date]:
    """Every day from since to until, inclusive (the chart's x axis, gaps included)."""
    return [since + dt.timedelta(days=i) for i in range((until - since).days + 1)]


@dataclass(frozen=True)
class Overview:
    """Counts of a record window by day × outcome, agent × outcome, and headline totals."""

    by_day: dict[dt.date, dict[str, int]]
    per_agent: list[tuple[str, dict[str, int]]]
    totals: dict[str, int]


def overview(qs: QuerySet[InterceptionRecord], *, agents_limit: int = 12) -> Overview:
    """One scan of the window: GROUP BY day, agent, outcome (a few hundred rows at most),
    folded here into the per-day chart, the per-agent chart and the tiles. Sessions are
    counted by their agent_startup records, which a GROUP BY can count without a DISTINCT."""
    rows = (
        qs.order_by()
        .annotate(day=TruncDate("timestamp", tzinfo=dt.UTC))
        .values("day", "agent_id", "outcome")
        .annotate(
            n=Count("id"),
            evaluate_only=Count("id", filter=Q(mode=Mode.EVALUATE_ONLY)),
            startups=Count("id", filter=Q(interception_point=InterceptionPoint.AGENT_STARTUP)),
        )
    )
    by_day: dict[dt.date, dict[str, int]] = {}
    by_agent: dict[int, dict[str, int]] = {}
    totals = dict.fromkeys(
        ("records", "blocked", "approved", "host_errors", "evaluate_only", "sessions"), 0
    )
    for row in rows:
        outcome, n = row["outcome"], row["n"]
        day = by_day.setdefault(row["day"], {})
        day[outcome] = day.get(outcome, 0) + n
        agent = by_agent.setdefault(row["agent_id"], {})
        agent[outcome] = agent.get(outcome, 0) + n
        totals["records"] += n
        totals["blocked"] += n if outcome in BLOCKING_OUTCOMES else 0
        totals["approved"] += n if outcome == Outcome.APPROVED else 0
        totals["host_errors"] += n if outcome == Outcome.HOST_ERROR else 0
        totals["evaluate_only"] += row["evaluate_only"]
        totals["sessions"] += row["startups"]
    slugs = dict(Agent.objects.filter(pk__in=list(by_agent)).values_list("pk", "slug"))
    ranked = sorted(
        ((slugs.get(pk, str(pk)), counts) for pk, counts in by_agent.items()),
        key=lambda item: (-sum(item[1].values()), item[0]),
    )
    return Overview(by_day=by_day, per_agent=ranked[:agents_limit], totals=totals)


def top_deny_reasons(qs: QuerySet[InterceptionRecord], limit: int = TOP_N) -> list[dict[str, Any]]:
    """The most frequent (reason code, hook message) pairs among denied records.

    The reason column holds a machine code (`console:hook_blocked`); the verdict message
    (kept in the payload-free wire, ≤ 256 bytes) is what a person reads, so both group.
    """
    rows = (
        qs.order_by()
        .filter(outcome=Outcome.DENIED)
        .annotate(message=KT("raw__verdict__message"))
        .values("reason", "message")
        .annotate(n=Count("id"))
        .order_by("-n", "reason", "message")[:limit]
    )
    return [
        {"reason": row["reason"] or "", "message": row["message"] or "", "count": row["n"]}
        for row in rows
    ]


def hooks_by_problem(qs: QuerySet[InterceptionRecord], limit: int = TOP_N) -> list[dict[str, Any]]:
    """Per deciding hook: blocks (denied), approval refusals (rejected/expired), host errors
    and timeouts, most troublesome first. One GROUP BY decided_hook."""
    timeout = Q(outcome=Outcome.HOST_ERROR, reason__icontains="timeout")
    rows = (
        qs.order_by()
        .filter(outcome__in=(*BLOCKING_OUTCOMES, Outcome.HOST_ERROR))
        .exclude(decided_hook="")
        .values("decided_hook")
        .annotate(
            blocks=Count("id", filter=Q(outcome=Outcome.DENIED)),
            refusals=Count("id", filter=Q(outcome__in=(Outcome.REJECTED, Outcome.EXPIRED))),
            errors=Count("id", filter=Q(outcome=Outcome.HOST_ERROR) & ~timeout),
            timeouts=Count("id", filter=timeout),
        )
        .annotate(problems=F("blocks") + F("refusals") + F("errors") + F("timeouts"))
        .filter(problems__gt=0)
        .order_by("-problems", "decided_hook")[:limit]
    )
    result: list[dict[str, Any]] = [dict(row) for row in rows]
    names = hook_labels([str(row["decided_hook"]) for row in result])
    for row in result:
        key = str(row["decided_hook"])
        row["label"] = names.get(key, key)
    return result


def hook_labels(keys: Sequence[str]) -> dict[str, str]:
    """`hk_…` → "Restart guard · PreToolUse · command" for the hooks that still exist."""
    hooks = Hook.objects.filter(key__in=list(keys)).only("key", "name", "event", "definition")
    return {hook.key: f"{hook.name} · {hook.event} · {hook.hook_type}" for hook in hooks}


class _PercentileCont(Aggregate):
    """PostgreSQL `percentile_cont(p) WITHIN GROUP (ORDER BY expr)`."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        super().__init__(expression, fraction=f"{float(fraction):.4f}", **extra)


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks, as percentile_cont does."""
    position = (len(sorted_values) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclass(frozen=True)
class WaitStats:
    """Reviewer wait (escalation created → decided, seconds) per day and overall."""

    by_day: dict[dt.date, tuple[float, float, int]]
    p50: float | None
    p95: float | None
    decided: int
    pending: int


def reviewer_wait(
    *, since: dt.datetime, until: dt.datetime | None, agent_slug: str | None
) -> WaitStats:
    """p50/p95 of the reviewer wait over decided escalations. PostgreSQL computes
    percentiles in SQL; on the embedded SQLite default (demo sizes) the durations of the
    period are read and ranked in Python."""
    window = decision_window(since=since, until=until, agent_slug=agent_slug)
    decided, pending = window.decided, window.pending
    if embedded.database_is_postgresql():
        wait = Extract(F("decided_at") - F("created_at"), "epoch")
        overall = decided.aggregate(
            p50=_PercentileCont(wait, 0.5), p95=_PercentileCont(wait, 0.95), n=Count("id")
        )
        daily = (
            decided.annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
            .values("day")
            .annotate(
                p50=_PercentileCont(wait, 0.5), p95=_PercentileCont(wait, 0.95), n=Count("id")
            )
        )
        by_day = {row["day"]: (row["p50"], row["p95"], row["n"]) for row in daily}
        return WaitStats(by_day, overall["p50"], overall["p95"], overall["n"], pending)
    grouped: dict[dt.date, list[float]] = {}
    for created, decided_at in decided.values_list("created_at", "decided_at"):
        if decided_at is None:  # excluded by the filter; keeps the types honest
            continue
        grouped.setdefault(created.astimezone(dt.UTC).date(), []).append(
            (decided_at - created).total_seconds()
        )
    everything = sorted(v for values in grouped.values() for v in values)
    by_day = {}
    for day, values in grouped.items():
        values.sort()
        by_day[day] = (_percentile(values, 0.5), _percentile(values, 0.95), len(values))
    if not everything:
        return WaitStats(by_day, None, None, 0, pending)
    return WaitStats(
        by_day,
        _percentile(everything, 0.5),
        _percentile(everything, 0.95),
        len(everything),
        pending,
    )


# --- charts ---------------------------------------------------------------------------------


def _outcome_series(keys: Iterable[str], values: Mapping[str, list[float]]) -> list[charts.Series]:
    labels = dict(Outcome.choices)
    return [
        charts.Series(key, labels[key], charts.OUTCOME_COLORS[key], values.get(key, []))
        for key in keys
    ]


def _responsive(draw: Any, *, width: int = 960, **kwargs: Any) -> dict[str, Any]:
    """The chart drawn for a desktop column and for a phone: SVG text scales with the
    viewBox, so one drawing can't be legible at both; CSS shows one of the two."""
    return {"wide": draw(width=width, **kwargs), "narrow": draw(width=NARROW_CHART_WIDTH, **kwargs)}


def dashboard_charts(
    qs: QuerySet[InterceptionRecord],
    *,
    first_day: dt.date,
    last_day: dt.date,
    wait: WaitStats,
    params: Mapping[str, str],
) -> dict[str, Any]:
    days = days_between(first_day, last_day)
    day_labels = [d.strftime("%b %d") for d in days]
    summary = overview(qs)
    by_day = summary.by_day
    present = {o for counts in by_day.values() for o in counts}
    keys = [o for o in Outcome.values if o in present]
    values = {k: [float(by_day.get(d, {}).get(k, 0)) for d in days] for k in keys}
    base = {"agent": params.get("agent", ""), "since": params.get("since", "")}

    reasons = top_deny_reasons(qs)
    reason_rows = [
        (f"{r['message'] or r['reason'] or '(no reason)'}", {"denied": r["count"]}) for r in reasons
    ]
    hooks = hooks_by_problem(qs)
    hook_series = [
        charts.Series("blocks", "Blocks", charts.OUTCOME_COLORS["denied"], []),
        charts.Series(
            "refusals", "Approval refused/expired", charts.OUTCOME_COLORS["rejected"], []
        ),
        charts.Series("errors", "Errors", charts.OUTCOME_COLORS["host_error"], []),
        charts.Series("timeouts", "Timeouts", charts.OUTCOME_COLORS["warned"], []),
    ]
    per_agent = summary.per_agent
    agent_keys = [o for o in Outcome.values if any(o in counts for _, counts in per_agent)]
    context: dict[str, Any] = {
        "totals": summary.totals,
        "outcomes_chart": _responsive(
            charts.stacked_bars,
            categories=day_labels,
            series=_outcome_series(keys, values),
            label="Records per day by outcome",
        ),
        "reasons": reasons,
        "reasons_chart": _responsive(
            charts.horizontal_bars,
            rows=reason_rows,
            series=_outcome_series(["denied"], {}),
            label="Top deny reasons",
            width=480,
            label_above=True,
            links=[search_url(**base, outcome="denied", q=r["reason"]) for r in reasons],
        ),
        "hooks": hooks,
        "hooks_chart": _responsive(
            charts.horizontal_bars,
            rows=[(h["label"], {s.key: h[s.key] for s in hook_series}) for h in hooks],
            series=hook_series,
            label="Hooks by blocks, refusals, errors and timeouts",
            label_above=True,
            links=[search_url(**base, hook=h["decided_hook"]) for h in hooks],
            empty_message="No hook blocked or failed in this period",
        ),
        "agents_chart": _responsive(
            charts.horizontal_bars,
            rows=per_agent,
            series=_outcome_series(agent_keys, {}),
            label="Records per agent by outcome",
            width=480,
            label_width=120,
            links=[search_url(agent=slug, since=base["since"]) for slug, _ in per_agent],
        ),
        "wait": wait,
    }
    p50 = [wait.by_day[d][0] if d in wait.by_day else None for d in days]
    p95 = [wait.by_day[d][1] if d in wait.by_day else None for d in days]
    context["wait_chart"] = _responsive(
        charts.lines,
        categories=day_labels,
        series=[
            charts.Series("p50", "p50", charts.PALETTE[0], p50),
            charts.Series("p95", "p95", charts.PALETTE[1], p95),
        ],
        label="Reviewer wait per day (created → decided)",
        unit=" s",
        empty_message="No escalation was decided in this period",
    )
    return context
