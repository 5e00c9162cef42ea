"""The audit dashboard: its ranges, its counts (read from the rollups, never the records)
and its charts.

A range is a number of equal bars ending with the one holding now: the last hour in
minutes, 24 h in hours, 7 days in 6-hour bars, 30 days in days (UTC). Its window starts
at the first bar and is open-ended, exactly the record search's `since=`, so every card
links to the search that finds the records it counts (`audit.forms.search_url`).

Counts come from `audit.rollups`: one read of the range's grain for the chart, tiles and
per-agent card; one read of the problem rollup (whole buckets covering the window) for
the deny-reason and problem-hook cards; plus the records still waiting for their seal,
by id, in the same snapshot.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.models import Agent, Hook
from audit import charts, rollups
from audit.dashboard_wait import WaitStats
from audit.forms import search_url
from audit.models import Outcome, RollupGrain

BLOCKING_OUTCOMES = (Outcome.DENIED, Outcome.REJECTED, Outcome.EXPIRED)
PROBLEM_OUTCOMES = (*BLOCKING_OUTCOMES, Outcome.HOST_ERROR)
TOP_N = 10
AGENTS_LIMIT = 12
NARROW_CHART_WIDTH = 400


@dataclass(frozen=True)
class DashRange:
    key: str
    label: str
    bars: int
    bar: dt.timedelta
    grain: RollupGrain
    tick: str  # strftime of a bar's label

    def since(self, now: dt.datetime) -> dt.datetime:
        """Start of the first bar: bars are aligned to multiples of the bar size in the UTC day."""
        now = now.astimezone(dt.UTC)
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        current = midnight + self.bar * ((now - midnight) // self.bar)
        if self.bar >= dt.timedelta(days=1):
            current = midnight
        return current - self.bar * (self.bars - 1)

    def starts(self, since: dt.datetime) -> list[dt.datetime]:
        return [since + self.bar * i for i in range(self.bars)]


RANGES: dict[str, DashRange] = {
    r.key: r
    for r in (
        DashRange("1h", "Last hour", 60, dt.timedelta(minutes=1), RollupGrain.MINUTE, "%H:%M"),
        DashRange("24h", "Last 24 hours", 24, dt.timedelta(hours=1), RollupGrain.HOUR, "%H:00"),
        DashRange("7d", "Last 7 days", 28, dt.timedelta(hours=6), RollupGrain.HOUR, "%b %d %H:00"),
        DashRange("30d", "Last 30 days", 30, dt.timedelta(days=1), RollupGrain.DAY, "%b %d"),
    )
}
DEFAULT_RANGE = "7d"


def dashboard_range(raw: str | None) -> DashRange:
    """The `?range=` choice: one of RANGES, else the default."""
    return RANGES.get((raw or "").strip(), RANGES[DEFAULT_RANGE])


@dataclass
class Counts:
    """A range's counts: per bar × outcome, per agent × outcome, tiles, problems."""

    by_bar: list[dict[str, int]]
    by_agent: dict[int, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    problems: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    waiting_left_out: int = 0


def range_counts(rng: DashRange, since: dt.datetime, agent_id: int | None) -> Counts:
    """Fold the rollup rows (and the records waiting for their seal) of the window."""
    with rollups.one_snapshot():
        chart = rollups.chart_rows(rng.grain, since, agent_id)
        agents = rollups.agent_rows(rng.grain, since, agent_id)
        problem_rows = rollups.problem_rows(since, agent_id)
        waiting, left_out = rollups.pending_rows(since, agent_id)
    if waiting:
        extra_base, extra_problems = rollups.aggregate(waiting, grains=[rng.grain])
        for (_grain, bucket, agent, outcome, mode), (n, startups) in extra_base.items():
            chart.append((bucket, outcome, n))
            agents.append((agent, outcome, mode, n, startups))
        problem_rows += [
            {
                "outcome": k[3],
                "decided_hook": v[1],
                "reason": v[2],
                "message": v[3],
                "records": v[0],
            }
            for k, v in extra_problems.items()
        ]
    counts = Counts(by_bar=[{} for _ in range(rng.bars)], waiting_left_out=left_out)
    for bucket, outcome, n in chart:
        index = (bucket - since) // rng.bar
        if index < rng.bars:  # later buckets (records dated ahead of now): totals only
            bar = counts.by_bar[index]
            bar[outcome] = bar.get(outcome, 0) + int(n)
    totals = dict.fromkeys(
        ("records", "blocked", "approved", "host_errors", "evaluate_only", "sessions"), 0
    )
    for agent_pk, outcome, mode, records, startups in agents:
        n = int(records)
        per_agent = counts.by_agent.setdefault(agent_pk, {})
        per_agent[outcome] = per_agent.get(outcome, 0) + n
        totals["records"] += n
        totals["blocked"] += n if outcome in BLOCKING_OUTCOMES else 0
        totals["approved"] += n if outcome == Outcome.APPROVED else 0
        totals["host_errors"] += n if outcome == Outcome.HOST_ERROR else 0
        totals["evaluate_only"] += n if mode == "evaluate_only" else 0
        totals["sessions"] += int(startups)
    counts.totals = totals
    for row in problem_rows:
        key = (row["outcome"], row["decided_hook"], row["reason"], row["message"])
        counts.problems[key] = counts.problems.get(key, 0) + int(row["records"])
    return counts


def top_deny_reasons(counts: Counts, limit: int = TOP_N) -> list[dict[str, Any]]:
    """Denied records per reason code, most frequent first, each with its most frequent
    verdict message (what a person reads; the code is what the search filters on)."""
    per_reason: dict[str, dict[str, int]] = {}
    for (outcome, _hook, reason, message), n in counts.problems.items():
        if outcome == Outcome.DENIED:
            messages = per_reason.setdefault(reason, {})
            messages[message] = messages.get(message, 0) + n
    rows: list[dict[str, Any]] = [
        {
            "reason": reason,
            "message": max(messages.items(), key=lambda item: (item[1], item[0]))[0],
            "count": sum(messages.values()),
        }
        for reason, messages in per_reason.items()
    ]
    rows.sort(key=lambda row: (-row["count"], row["reason"]))
    return rows[:limit]


def hooks_by_problem(counts: Counts, limit: int = TOP_N) -> list[dict[str, Any]]:
    """Per deciding hook: blocks (denied), approval refusals (rejected/expired), host
    errors and timeouts (a host error whose reason mentions a timeout)."""
    hooks: dict[str, dict[str, Any]] = {}
    for (outcome, hook, reason, _message), n in counts.problems.items():
        if not hook:
            continue
        row = hooks.setdefault(
            hook, {"decided_hook": hook, "blocks": 0, "refusals": 0, "errors": 0, "timeouts": 0}
        )
        if outcome == Outcome.DENIED:
            row["blocks"] += n
        elif outcome in (Outcome.REJECTED, Outcome.EXPIRED):
            row["refusals"] += n
        elif "timeout" in reason.lower():
            row["timeouts"] += n
        else:
            row["errors"] += n
    result = list(hooks.values())
    for row in result:
        row["problems"] = row["blocks"] + row["refusals"] + row["errors"] + row["timeouts"]
    result.sort(key=lambda row: (-row["problems"], row["decided_hook"]))
    result = result[:limit]
    names = hook_labels([row["decided_hook"] for row in result])
    for row in result:
        row["label"] = names.get(row["decided_hook"], row["decided_hook"])
    return result


def hook_labels(keys: Sequence[str]) -> dict[str, str]:
    """`hk_…` → "Restart guard · PreToolUse · command" for the hooks that still exist."""
    hooks = Hook.objects.filter(key__in=list(keys)).only("key", "name", "event", "definition")
    return {hook.key: f"{hook.name} · {hook.event} · {hook.hook_type}" for hook in hooks}


def agent_id_for(slug: str) -> int | None:
    """The agent's id, or 0 (matches nothing) for an unknown slug, None for all agents."""
    if not slug:
        return None
    found = Agent.objects.filter(slug=slug).values_list("pk", flat=True).first()
    return found if found is not None else 0


# --- charts ---------------------------------------------------------------------------------


def _outcome_series(keys: Iterable[str], values: Mapping[str, list[float]]) -> list[charts.Series]:
    labels = dict(Outcome.choices)
    return [
        charts.Series(
            key,
            labels[key],
            charts.OUTCOME_COLORS[key],
            values.get(key, []),
            charts.OUTCOME_PATTERNS.get(key, ""),
        )
        for key in keys
    ]


def _responsive(draw: Any, *, width: int = 960, **kwargs: Any) -> dict[str, Any]:
    """The chart drawn for a desktop column and for a phone: SVG text scales with the
    viewBox, so one drawing can't be legible at both; CSS shows one of the two."""
    return {"wide": draw(width=width, **kwargs), "narrow": draw(width=NARROW_CHART_WIDTH, **kwargs)}


def _table(
    head: list[str], rows: list[list[Any]], links: Sequence[str | None] = ()
) -> dict[str, Any]:
    """A chart's numbers as a table (shown on demand): no colour needed to read them."""
    return {
        "head": head,
        "rows": [{"cells": r, "link": links[i] if links else None} for i, r in enumerate(rows)],
    }


def _tiles(totals: Mapping[str, int], base: Mapping[str, str]) -> list[dict[str, Any]]:
    """The headline numbers, each with the search of exactly the records it counts."""
    blocked = ",".join(BLOCKING_OUTCOMES)
    return [
        {"key": "records", "label": "records", "cls": "", "url": search_url(**base)},
        {
            "key": "sessions",
            "label": "sessions started",
            "cls": "",
            "url": search_url(**base, interception_point="agent_startup"),
        },
        {
            "key": "blocked",
            "label": "blocked (denied, rejected, expired)",
            "cls": "bad",
            "url": search_url(**base, outcome=blocked),
        },
        {
            "key": "approved",
            "label": "approved by reviewers",
            "cls": "ok",
            "url": search_url(**base, outcome="approved"),
        },
        {
            "key": "host_errors",
            "label": "host errors",
            "cls": "err",
            "url": search_url(**base, outcome="host_error"),
        },
        {
            "key": "evaluate_only",
            "label": "evaluate only — not enforced",
            "cls": "eval",
            "url": search_url(**base, mode="evaluate_only"),
        },
    ]


def dashboard_context(
    rng: DashRange, *, since: dt.datetime, agent_slug: str, wait: WaitStats
) -> dict[str, Any]:
    counts = range_counts(rng, since, agent_id_for(agent_slug))
    starts = rng.starts(since)
    bar_labels = [start.strftime(rng.tick) for start in starts]
    base = {"agent": agent_slug, "since": since.isoformat()}
    present = {o for bar in counts.by_bar for o in bar}
    keys = [o for o in Outcome.values if o in present]
    values = {k: [float(bar.get(k, 0)) for bar in counts.by_bar] for k in keys}
    bar_links = [
        search_url(agent=agent_slug, since=start.isoformat(), until=(start + rng.bar).isoformat())
        for start in starts
    ]
    labels = dict(Outcome.choices)
    tiles = _tiles(counts.totals, base)
    for tile in tiles:
        tile["count"] = counts.totals[tile["key"]]

    reasons = top_deny_reasons(counts)
    reason_links = [
        search_url(**base, outcome="denied", reason=r["reason"]) if r["reason"] else None
        for r in reasons
    ]
    hooks = hooks_by_problem(counts)
    hook_links = [
        search_url(**base, decided_hook=h["decided_hook"], outcome=",".join(PROBLEM_OUTCOMES))
        for h in hooks
    ]
    hook_series = [
        charts.Series("blocks", "Blocks", charts.OUTCOME_COLORS["denied"], [], "stripes"),
        charts.Series(
            "refusals", "Approval refused/expired", charts.OUTCOME_COLORS["rejected"], [], "cross"
        ),
        charts.Series("errors", "Errors", charts.OUTCOME_COLORS["host_error"], [], "stripes"),
        charts.Series("timeouts", "Timeouts", charts.OUTCOME_COLORS["warned"], [], "dots"),
    ]
    slugs = dict(Agent.objects.filter(pk__in=list(counts.by_agent)).values_list("pk", "slug"))
    per_agent = sorted(
        ((slugs.get(pk, str(pk)), c) for pk, c in counts.by_agent.items()),
        key=lambda item: (-sum(item[1].values()), item[0]),
    )[:AGENTS_LIMIT]
    agent_keys = [o for o in Outcome.values if any(o in c for _, c in per_agent)]
    agent_links = [search_url(agent=slug, since=base["since"]) for slug, _ in per_agent]
    reason_label = [r["message"] or r["reason"] or "(no reason)" for r in reasons]
    context: dict[str, Any] = {
        "totals": counts.totals,
        "tiles": tiles,
        "waiting_left_out": counts.waiting_left_out,
        "outcomes_chart": _responsive(
            charts.stacked_bars,
            categories=bar_labels,
            series=_outcome_series(keys, values),
            label=f"Records per {_bar_name(rng)} by outcome",
            links=bar_links,
        ),
        "outcomes_table": _table(
            ["From (UTC)", *[labels[k] for k in keys], "Total"],
            [
                [
                    starts[i].strftime("%Y-%m-%d %H:%M"),
                    *[bar.get(k, 0) for k in keys],
                    sum(bar.values()),
                ]
                for i, bar in enumerate(counts.by_bar)
                if bar
            ],
            [bar_links[i] for i, bar in enumerate(counts.by_bar) if bar],
        ),
        "reasons": reasons,
        "reasons_chart": _responsive(
            charts.horizontal_bars,
            rows=[
                (label, {"denied": r["count"]})
                for label, r in zip(reason_label, reasons, strict=True)
            ],
            series=_outcome_series(["denied"], {}),
            label="Top deny reasons",
            width=480,
            label_above=True,
            links=reason_links if all(reason_links) else None,
        ),
        "reasons_table": _table(
            ["Reason", "Message", "Denied"],
            [[r["reason"] or "(none)", r["message"], r["count"]] for r in reasons],
            reason_links,
        ),
        "hooks": hooks,
        "hooks_chart": _responsive(
            charts.horizontal_bars,
            rows=[(h["label"], {s.key: h[s.key] for s in hook_series}) for h in hooks],
            series=hook_series,
            label="Hooks by blocks, refusals, errors and timeouts",
            label_above=True,
            links=hook_links,
            empty_message="No hook blocked or failed in this period",
        ),
        "hooks_table": _table(
            ["Hook", *[s.label for s in hook_series], "Total"],
            [[h["label"], *[h[s.key] for s in hook_series], h["problems"]] for h in hooks],
            hook_links,
        ),
        "agents_chart": _responsive(
            charts.horizontal_bars,
            rows=per_agent,
            series=_outcome_series(agent_keys, {}),
            label="Records per agent by outcome",
            width=480,
            label_width=120,
            links=agent_links,
        ),
        "agents_table": _table(
            ["Agent", *[labels[k] for k in agent_keys], "Total"],
            [[slug, *[c.get(k, 0) for k in agent_keys], sum(c.values())] for slug, c in per_agent],
            agent_links,
        ),
        "wait": wait,
    }
    p50 = [wait.by_bar[s][0] if s in wait.by_bar else None for s in starts]
    p95 = [wait.by_bar[s][1] if s in wait.by_bar else None for s in starts]
    context["wait_chart"] = _responsive(
        charts.lines,
        categories=bar_labels,
        series=[
            charts.Series("p50", "p50", charts.PALETTE[0], p50),
            charts.Series("p95", "p95 (dashed)", charts.PALETTE[1], p95, "dashed"),
        ],
        label=f"Reviewer wait per {_bar_name(rng)} (created → decided)",
        unit=" s",
        empty_message="No escalation was decided in this period",
    )
    return context


def _bar_name(rng: DashRange) -> str:
    return {"1h": "minute", "24h": "hour", "7d": "6 hours", "30d": "day"}[rng.key]
