"""Reads of the approvals app for the History tab, the escalation detail page and the audit
pages (escalations beside the records); the live paths' reads are in approvals.selectors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from agents.models import Hook
from approvals.models import Escalation, EscalationStatus, EscalationVote
from approvals.selectors import escalations_visible_to, with_votes
from console.governance.actions import GovernanceAction
from console.governance.models import GovernanceEvent


@dataclass(frozen=True)
class HistoryFilters:
    status: str = ""
    agent: str = ""
    reviewer: str = ""
    since: date | None = None
    until: date | None = None


def day_span(day: date) -> tuple[datetime, datetime]:
    """[start, end) of a calendar day in the console's time zone, in UTC. OverflowError when
    that is not representable (9999-12-31 ends in year 10000; 0001-01-01 east of UTC
    starts in year 0): the History form refuses such a date."""
    zone = timezone.get_current_timezone()
    start = timezone.make_aware(datetime.combine(day, time.min), zone)
    end = timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min), zone)
    return start.astimezone(UTC), end.astimezone(UTC)


def history_for(user: Any, filters: HistoryFilters) -> QuerySet[Escalation]:
    """Every escalation `user` may see, newest first, filtered as the History tab asks."""
    qs = with_votes(escalations_visible_to(user).select_related("agent"), user)
    if filters.status:
        qs = qs.filter(status=filters.status)
    if filters.agent:
        qs = qs.filter(agent__slug=filters.agent)
    if filters.reviewer:
        voted = EscalationVote.objects.filter(
            escalation_id=OuterRef("pk"), reviewer__username=filters.reviewer
        )
        qs = qs.filter(Q(decided_by__username=filters.reviewer) | Q(Exists(voted)))
    if filters.since:
        qs = qs.filter(created_at__gte=day_span(filters.since)[0])
    if filters.until:
        qs = qs.filter(created_at__lt=day_span(filters.until)[1])
    return qs.order_by("-created_at", "-id")


RECENT_ON_TOOL = 10
# The escalation.created event is written in the escalation's own transaction, right after it.
_CREATED_EVENT_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class EscalationDetail:
    """What the detail page shows besides the escalation's own fields."""

    votes: list[EscalationVote]
    # The same agent's latest escalations of the same tool (this one excluded), newest first.
    recent: list[Escalation]
    # Keys of the approval hooks whose strictest settings made the rule, as recorded when the
    # escalation was created; None when that event is not found (older rows).
    rule_hooks: list[str] | None
    # The hooks named above that still exist, by key (a deleted hook keeps only its key).
    hooks: dict[str, Hook]


def escalation_detail(user: Any, escalation: Escalation) -> EscalationDetail:
    """Four queries, whatever the number of votes, hooks and earlier escalations."""
    votes = list(escalation.votes.all())
    recent = list(
        escalations_visible_to(user)
        .filter(
            agent_id=escalation.agent_id,
            tool_name=escalation.tool_name,
            interception_point=escalation.interception_point,
        )
        .exclude(pk=escalation.pk)
        .order_by("-created_at", "-id")[:RECENT_ON_TOOL]
    )
    created = (
        GovernanceEvent.objects.filter(
            at__gte=escalation.created_at,
            at__lte=escalation.created_at + _CREATED_EVENT_WINDOW,
            action=GovernanceAction.ESCALATION_CREATED,
            object_type=Escalation.__name__,
            object_id=str(escalation.pk),
        )
        .values_list("after", flat=True)
        .first()
    )
    rule_hooks = None
    if isinstance(created, dict) and isinstance(created.get("rule_hooks"), list):
        rule_hooks = [str(key) for key in created["rule_hooks"]]
    keys = {escalation.hook_key, *(rule_hooks or [])} - {""}
    hooks = {
        hook.key: hook for hook in Hook.objects.filter(key__in=keys).select_related("custom_agent")
    }
    return EscalationDetail(votes=votes, recent=recent, rule_hooks=rule_hooks, hooks=hooks)


# --- for the audit pages (auditors read these beside the records) ---------------------------


def session_escalations(session_id: str, agent_ids: list[int]) -> list[Escalation]:
    """Escalations raised inside an agent session, oldest first, with their votes."""
    return list(
        Escalation.objects.filter(session_id=session_id, agent_id__in=agent_ids)
        .prefetch_related("votes")
        .order_by("created_at", "id")
    )


@dataclass(frozen=True)
class DecisionWindow:
    """Escalations created in a period: how many still pend, and the decided ones (approved
    or rejected; an expiry or a cancellation is not a reviewer's decision)."""

    pending: int
    decided: QuerySet[Escalation]


def decision_window(
    *, since: datetime, until: datetime | None, agent_slug: str | None
) -> DecisionWindow:
    qs = Escalation.objects.filter(created_at__gte=since)
    if until is not None:
        qs = qs.filter(created_at__lt=until)
    if agent_slug:
        qs = qs.filter(agent__slug=agent_slug)
    decided = qs.filter(
        decided_at__isnull=False,
        status__in=(EscalationStatus.APPROVED, EscalationStatus.REJECTED),
    ).order_by()
    return DecisionWindow(
        pending=qs.filter(status=EscalationStatus.PENDING).count(), decided=decided
    )
