"""The session timeline (audit/session.html): one hooks session's records in sequence
order, with the gaps in the sequence and the approvals raised in the session placed
between them. The records come from `audit.selectors.session_records`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from approvals.history_selectors import session_escalations
from audit.models import InterceptionPoint, InterceptionRecord, Outcome

TIMELINE_LIMIT = 5000


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
