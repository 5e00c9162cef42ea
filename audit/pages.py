"""Presentation helpers for the audit pages (audit/views.py): filter-form descriptors,
shareable URLs, the session timeline, recent sessions and the dashboard's charts.

Nothing here filters records by itself: every record query starts from
`audit.selectors.records_filter` / `session_records`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count, Max, Min, Q, QuerySet
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from approvals.selectors import session_escalations
from audit import charts, dashboard
from audit.models import InterceptionPoint, InterceptionRecord, Outcome
from audit.selectors import FILTER_CHOICES, RECORD_FILTERS
from console.governance.models import GovernanceEvent

EXPORT_URL_NAME = "api-records-export"
EXPORT_FORMATS = (("csv", "CSV"), ("jsonl", "JSONL"))
SESSIONS_DEFAULT_DAYS = 7
SESSIONS_LIMIT = 50
SESSION_FILTERS = ("agent", "custom_agent", "since", "until")
TIMELINE_LIMIT = 5000
DASHBOARD_DAY_CHOICES = (7, 14, 30, 90)
DASHBOARD_DEFAULT_DAYS = 14
BLOCKED = (Outcome.DENIED, Outcome.REJECTED, Outcome.EXPIRED, Outcome.HOST_ERROR)

# (name, label, kind, placeholder, advanced)
_RECORD_FIELDS: tuple[tuple[str, str, str, str, bool], ...] = (
    ("agent", "Agent", "agent", "", False),
    ("outcome", "Outcome", "choice", "", False),
    ("interception_point", "Interception point", "choice", "", False),
    ("tool_name", "Tool name", "text", "e.g. ExecuteShellCommand", False),
    ("q", "Reason text", "search", "contains…", False),
    ("since", "Since", "text", "2026-01-31", False),
    ("until", "Until", "text", "2026-02-01T09:00Z", False),
    ("custom_agent", "Custom agent", "text", "e.g. my_hooked_agent", True),
    ("session_id", "Session", "text", "session id", True),
    ("decision", "Decision", "choice", "", True),
    ("hook", "Hook id", "text", "hk_…", True),
    ("mode", "Mode", "choice", "", True),
)
_EVENT_FIELDS: tuple[tuple[str, str, str, str, bool], ...] = (
    ("action", "Action", "action", "", False),
    ("actor", "Actor", "actor", "exact name", False),
    ("agent", "Agent", "agent", "", False),
    ("q", "Text", "search", "summary contains…", False),
    ("since", "Since", "text", "2026-01-31", False),
    ("until", "Until", "text", "exclusive", False),
)


def query_url(path: str, filters: Mapping[str, str], **extra: str | None) -> str:
    """`path?filters&extra` with empty values dropped: the shareable form of a view."""
    params = {k: v for k, v in {**filters, **extra}.items() if v}
    return f"{path}?{urlencode(params)}" if params else path


def search_url(**filters: Any) -> str:
    return query_url(reverse("audit:records"), {k: str(v) for k, v in filters.items() if v})


def _choices(kind: str, name: str) -> list[tuple[str, str]]:
    if kind == "agent":
        return [
            (slug, slug) for slug in Agent.objects.order_by("slug").values_list("slug", flat=True)
        ]
    if kind == "action":
        actions = GovernanceEvent.objects.order_by("action").values_list("action", flat=True)
        names = list(actions.distinct())
        prefixes = sorted({a.split(".", 1)[0] + "." for a in names if "." in a})
        return [(p, f"{p}* (all)") for p in prefixes] + [(a, a) for a in names]
    if kind == "choice":
        return list(FILTER_CHOICES[name])
    return []


def _form(fields: Iterable[tuple[str, str, str, str, bool]], filters: Mapping[str, str]) -> Any:
    result = []
    for name, label, kind, placeholder, advanced in fields:
        entry = {
            "name": name,
            "label": label,
            "kind": kind,
            "placeholder": placeholder,
            "advanced": advanced,
            "value": filters.get(name, ""),
            "choices": _choices(kind, name),
        }
        if kind == "actor":
            entry["choices"] = [
                (a, a)
                for a in GovernanceEvent.objects.order_by("actor_label")
                .values_list("actor_label", flat=True)
                .distinct()[:200]
            ]
        result.append(entry)
    return {
        "fields": result,
        "advanced_open": any(f["advanced"] and f["value"] for f in result),
    }


def record_filter_form(filters: Mapping[str, str]) -> Any:
    return _form(_RECORD_FIELDS, filters)


def event_filter_form(filters: Mapping[str, str]) -> Any:
    return _form(_EVENT_FIELDS, filters)


def export_links(filters: Mapping[str, str]) -> list[dict[str, str]]:
    """The API export of exactly the filter on screen (cursor and limit are not filters)."""
    clean = {k: v for k, v in filters.items() if k in RECORD_FILTERS}
    return [
        {
            "format": fmt,
            "label": label,
            "url": query_url(reverse(EXPORT_URL_NAME), {"format": fmt, **clean}),
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


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def verdict_rows(record: InterceptionRecord) -> list[dict[str, Any]]:
    rows = []
    items = record.raw.get("verdicts") or []
    labels = dashboard.hook_labels([str(item.get("name")) for item in items if item.get("name")])
    for item in items:
        rows.append(
            {
                "index": item.get("index"),
                "name": item.get("name") or "",
                "label": labels.get(str(item.get("name")), ""),
                "decision": item.get("decision"),
                "reason": item.get("reason") or "",
                "decided": record.decided_by is not None and item.get("index") == record.decided_by,
                "hook_url": search_url(hook=item.get("name")) if item.get("name") else "",
            }
        )
    return rows


# --- session timeline -------------------------------------------------------------------


@dataclass
class Timeline:
    entries: list[dict[str, Any]] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    agent_slug: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    first: InterceptionRecord | None = None
    last: InterceptionRecord | None = None
    gaps: int = 0
    missing_startup: bool = False
    missing_shutdown: bool = False
    evaluate_only: bool = False
    truncated: bool = False
    approvals: int = 0
    record_count: int = 0

    @property
    def outcome_counts(self) -> list[tuple[str, str, int]]:
        """(outcome, human label, count) in the Outcome order."""
        labels = dict(Outcome.choices)
        return [
            (key, labels[key], self.counts[key]) for key in Outcome.values if key in self.counts
        ]

    @property
    def duration(self) -> str:
        if self.first is None or self.last is None:
            return ""
        return human_duration((self.last.timestamp - self.first.timestamp).total_seconds())


def human_duration(seconds: float) -> str:
    """`42 s`, `3 min 5 s`, `2 h 10 min`."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def build_timeline(
    qs: QuerySet[InterceptionRecord], *, session_id: str, agent_slug: str | None
) -> Timeline:
    """Records in sequence order with sequence gaps and approvals placed between them.

    An escalation goes right after the last record whose timestamp is not later than the
    escalation's creation: the record that asked for it (its context was stamped first).
    """
    records = list(qs[: TIMELINE_LIMIT + 1])
    timeline = Timeline(agent_slug=agent_slug)
    timeline.truncated = len(records) > TIMELINE_LIMIT
    records = records[:TIMELINE_LIMIT]
    timeline.agents = sorted({r.agent.slug for r in records})
    if len(timeline.agents) > 1:
        # One session id used by several agents: ask which one before drawing a sequence.
        return timeline
    if not records:
        return timeline
    timeline.agent_slug = records[0].agent.slug
    timeline.first, timeline.last = records[0], records[-1]
    timeline.record_count = len(records)
    timeline.missing_startup = records[0].interception_point != InterceptionPoint.AGENT_STARTUP
    timeline.missing_shutdown = records[-1].interception_point != InterceptionPoint.AGENT_SHUTDOWN
    timeline.evaluate_only = any(r.mode == "evaluate_only" for r in records)
    for record in records:
        timeline.counts[record.outcome] = timeline.counts.get(record.outcome, 0) + 1
    pending = session_escalations(session_id, [records[0].agent_id])
    timeline.approvals = len(pending)
    previous: InterceptionRecord | None = None
    for record in records:
        if previous is not None and record.sequence > previous.sequence + 1:
            timeline.gaps += 1
            timeline.entries.append(
                {
                    "kind": "gap",
                    "after": previous.sequence,
                    "before": record.sequence,
                    "missing": record.sequence - previous.sequence - 1,
                }
            )
        while pending and previous is not None and pending[0].created_at < record.timestamp:
            timeline.entries.append(_approval_entry(pending.pop(0)))
        timeline.entries.append({"kind": "record", "record": record})
        previous = record
    timeline.entries += [_approval_entry(e) for e in pending]
    return timeline


def _approval_entry(escalation: Any) -> dict[str, Any]:
    waited = ""
    if escalation.decided_at is not None:
        waited = human_duration((escalation.decided_at - escalation.created_at).total_seconds())
    return {"kind": "approval", "escalation": escalation, "waited": waited}


# --- recent sessions --------------------------------------------------------------------


def with_default_since(params: QueryDict, *, days: int) -> QueryDict:
    """The request's filters, with `since` = `days` ago when the URL sets no period."""
    result = params.copy()
    if not result.get("since") and not result.get("until"):
        start = timezone.now().astimezone(dt.UTC).date() - dt.timedelta(days=days)
        result["since"] = start.isoformat()
    return result


def recent_sessions(qs: QuerySet[InterceptionRecord]) -> list[dict[str, Any]]:
    """Most recently active sessions of a filtered record set, one GROUP BY query."""
    rows = (
        qs.order_by()
        .values("agent__slug", "session_id")
        .annotate(
            started=Min("timestamp"),
            ended=Max("timestamp"),
            records=Count("id"),
            blocked=Count("id", filter=Q(outcome__in=BLOCKED)),
            approved=Count("id", filter=Q(outcome=Outcome.APPROVED)),
            evaluate_only=Count("id", filter=Q(mode="evaluate_only")),
            shutdown=Count("id", filter=Q(interception_point=InterceptionPoint.AGENT_SHUTDOWN)),
            custom_agent=Max("custom_agent"),
            first_seq=Min("sequence"),
            last_seq=Max("sequence"),
        )
        .order_by("-ended", "session_id")[:SESSIONS_LIMIT]
    )
    result: list[dict[str, Any]] = []
    for aggregated in rows:
        row: dict[str, Any] = dict(aggregated)
        row["gaps"] = row["last_seq"] - row["first_seq"] + 1 != row["records"]
        row["url"] = query_url(
            reverse("audit:session", args=[row["session_id"]]), {"agent": row["agent__slug"]}
        )
        result.append(row)
    return result


# --- governance events ------------------------------------------------------------------


def event_rows(events: Iterable[GovernanceEvent]) -> list[dict[str, Any]]:
    rows = []
    for event in events:
        before = event.before if isinstance(event.before, dict) else None
        after = event.after if isinstance(event.after, dict) else None
        changed: list[str] = []
        if before is not None and after is not None:
            changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        rows.append(
            {
                "event": event,
                "has_detail": event.before is not None or event.after is not None,
                "before": "" if event.before is None else pretty_json(event.before),
                "after": "" if event.after is None else pretty_json(event.after),
                "changed": changed,
            }
        )
    return rows


# --- dashboard --------------------------------------------------------------------------


def dashboard_days(raw: str | None) -> int:
    try:
        value = int(raw or DASHBOARD_DEFAULT_DAYS)
    except ValueError:
        return DASHBOARD_DEFAULT_DAYS
    return value if value in DASHBOARD_DAY_CHOICES else DASHBOARD_DEFAULT_DAYS


def _outcome_series(keys: Iterable[str], values: Mapping[str, list[float]]) -> list[charts.Series]:
    labels = dict(Outcome.choices)
    return [
        charts.Series(key, labels[key], charts.OUTCOME_COLORS[key], values.get(key, []))
        for key in keys
    ]


NARROW_CHART_WIDTH = 400


def _responsive(draw: Any, *, width: int = 960, **kwargs: Any) -> dict[str, Any]:
    """The chart drawn for a desktop column and for a phone: SVG text scales with the
    viewBox, so one drawing can't be legible at both; CSS shows one of the two."""
    return {"wide": draw(width=width, **kwargs), "narrow": draw(width=NARROW_CHART_WIDTH, **kwargs)}


def dashboard_charts(
    qs: QuerySet[InterceptionRecord],
    *,
    first_day: dt.date,
    last_day: dt.date,
    wait: dashboard.WaitStats,
    params: Mapping[str, str],
) -> dict[str, Any]:
    days = dashboard.days_between(first_day, last_day)
    day_labels = [d.strftime("%b %d") for d in days]
    summary = dashboard.overview(qs)
    by_day = summary.by_day
    present = {o for counts in by_day.values() for o in counts}
    keys = [o for o in Outcome.values if o in present]
    values = {k: [float(by_day.get(d, {}).get(k, 0)) for d in days] for k in keys}
    base = {"agent": params.get("agent", ""), "since": params.get("since", "")}

    reasons = dashboard.top_deny_reasons(qs)
    reason_rows = [
        (f"{r['message'] or r['reason'] or '(no reason)'}", {"denied": r["count"]}) for r in reasons
    ]
    hooks = dashboard.hooks_by_problem(qs)
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
