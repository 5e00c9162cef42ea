"""Reads of the approvals app: who may see and decide which escalations, and list queries.

People see exactly the escalations they may decide: reviewers (optionally restricted to some
agents by ReviewerScope rows) and admins (all). Agents see only their own, by id.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import models
from django.db.models import (
    CharField,
    Count,
    DateTimeField,
    Exists,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextChoices,
    UUIDField,
    Value,
)
from django.db.models.aggregates import StringAgg
from django.db.models.functions import Cast, Concat
from django.http import Http404
from django.utils import timezone

from agents.models import Agent, Hook
from agents.selectors import hook_name_by_key
from approvals.models import (
    Escalation,
    EscalationStatus,
    EscalationVote,
    ReviewerScope,
    SlackIdentity,
    VoteOutcome,
)
from console.governance.actions import GovernanceAction
from console.governance.models import GovernanceEvent
from console.prepared import PreparedQuery
from console.roles import is_admin, is_reviewer


def _scope_filter(user_id: int) -> Q:
    scopes = ReviewerScope.objects.filter(user_id=user_id)
    return Q(~Exists(scopes)) | Q(Exists(scopes.filter(agent_id=OuterRef("agent_id"))))


def escalations_visible_to(user: Any) -> QuerySet[Escalation]:
    """Escalations `user` may see and decide (none for agents, auditors and outsiders)."""
    if not is_reviewer(user):
        return Escalation.objects.none()
    if is_admin(user):
        return Escalation.objects.all()
    return Escalation.objects.filter(_scope_filter(user.pk))


def agents_decidable_by(user: Any) -> QuerySet[Agent]:
    if not is_reviewer(user):
        return Agent.objects.none()
    if is_admin(user):
        return Agent.objects.all()
    scopes = ReviewerScope.objects.filter(user_id=user.pk)
    return Agent.objects.filter(
        Q(~Exists(scopes)) | Q(Exists(scopes.filter(agent_id=OuterRef("pk"))))
    )


@dataclass(frozen=True)
class ReviewerReach:
    """The agents a reviewer may decide for: a set of ids, or None for every agent."""

    agent_ids: frozenset[int] | None

    def covers(self, other: ReviewerReach) -> bool:
        if self.agent_ids is None:
            return True
        return other.agent_ids is not None and other.agent_ids <= self.agent_ids

    def sees(self, agent_id: int) -> bool:
        """Whether an escalation of this agent is one the reviewer may see and decide
        (what `escalations_visible_to` selects for them)."""
        return self.agent_ids is None or agent_id in self.agent_ids


def reviewer_reach(user: Any, scoped: Iterable[int] | None = None) -> ReviewerReach | None:
    """None for anyone who is not a reviewer (nor an admin). `scoped`: the user's
    ReviewerScope agent ids when the caller read them already."""
    if not is_reviewer(user):
        return None
    if is_admin(user):
        return ReviewerReach(None)
    if scoped is None:
        scoped = ReviewerScope.objects.filter(user_id=user.pk).values_list("agent_id", flat=True)
    return ReviewerReach(frozenset(scoped) or None)


def reviewer_scopes(user_ids: list[int]) -> dict[int, list[str]]:
    """The agent slugs each of `user_ids` is restricted to (absent: not restricted)."""
    scopes: dict[int, list[str]] = {}
    rows = ReviewerScope.objects.filter(user_id__in=user_ids).order_by("agent__slug")
    for user_id, slug in rows.values_list("user_id", "agent__slug"):
        scopes.setdefault(user_id, []).append(slug)
    return scopes


def slack_member_of(user: Any) -> str:
    """The Slack member ID linked to `user`, or ""."""
    identity = SlackIdentity.objects.filter(user_id=user.pk).first()
    return identity.slack_user_id if identity else ""


def reviewer_may_decide(user: Any, agent_id: int) -> bool:
    if not is_reviewer(user):
        return False
    if is_admin(user):
        return True
    counts = ReviewerScope.objects.filter(user_id=user.pk).aggregate(
        scoped=Count("id"), here=Count("id", filter=Q(agent_id=agent_id))
    )
    return bool(counts["scoped"] == 0 or counts["here"] > 0)


def _uuid(pk: UUID | str) -> UUID:
    try:
        return pk if isinstance(pk, UUID) else UUID(str(pk))
    except ValueError:
        raise Http404("No such escalation.") from None


def get_escalation_for_user(user: Any, pk: UUID | str, *, write: bool = False) -> Escalation:
    """The escalation if `user` may see it (people see exactly what they may decide); else 404."""
    escalation = escalations_visible_to(user).select_related("agent").filter(pk=_uuid(pk)).first()
    if escalation is None:
        raise Http404("No such escalation.")
    return escalation


_agents_escalation = PreparedQuery(
    Escalation,
    lambda pk, agent_id: Escalation.objects.select_related("agent").filter(
        pk=pk, agent_id=agent_id
    )[:1],
    pk=UUIDField(),
    agent_id=models.IntegerField(),
)


def get_escalation_for_agent(agent: Agent, pk: UUID | str) -> Escalation:
    """An agent reads only its own escalations; anything else is 404, never 403."""
    escalation = _agents_escalation.first(pk=_uuid(pk), agent_id=agent.pk)
    if escalation is None:
        raise Http404("No such escalation.")
    return escalation


def effective_status(escalation: Escalation, now: datetime | None = None) -> str:
    """Pending past expires_at is expired, whether or not the sweep has run."""
    now = now or timezone.now()
    if escalation.status == EscalationStatus.PENDING and escalation.expires_at <= now:
        return EscalationStatus.EXPIRED.value
    return str(escalation.status)


def _with_votes(qs: QuerySet[Escalation], user: Any) -> QuerySet[Escalation]:
    """Rows for lists: vote counts, this reviewer's vote and the hook's current name."""
    my_vote = EscalationVote.objects.filter(escalation_id=OuterRef("pk"), reviewer_id=user.pk)
    return qs.annotate(
        approvals=Count("votes", filter=Q(votes__outcome=VoteOutcome.APPROVE)),
        my_vote=Subquery(my_vote.values("outcome")[:1]),
        hook_name=hook_name_by_key("hook_key"),
    )


class PendingOrder(TextChoices):
    """How the inbox lists open escalations: soonest expiry first unless asked otherwise."""

    EXPIRES = "expires", "Time left"
    NEWEST = "newest", "Newest"


def pending_order(value: str | None) -> str:
    """A page's `sort` parameter as a PendingOrder value (time left unless it names one)."""
    return value if value in PendingOrder.values else PendingOrder.EXPIRES.value


_ORDERINGS: dict[str, tuple[str, ...]] = {
    PendingOrder.EXPIRES: ("expires_at", "created_at", "id"),
    PendingOrder.NEWEST: ("-created_at", "-id"),
}


def pending_for(
    user: Any, *, now: datetime | None = None, order: str = PendingOrder.EXPIRES
) -> QuerySet[Escalation]:
    """Open escalations `user` may decide (not past expires_at), with vote counts; soonest
    expiry first by default."""
    now = now or timezone.now()
    qs = escalations_visible_to(user).filter(status=EscalationStatus.PENDING, expires_at__gt=now)
    ordering = _ORDERINGS.get(order, _ORDERINGS[PendingOrder.EXPIRES])
    return _with_votes(qs.select_related("agent"), user).order_by(*ordering)


@dataclass(frozen=True)
class InboxPage:
    """The open escalations the inbox shows (the first `settings.CONSOLE_INBOX_ROWS` in its
    order) and how many are open in all: a page of hundreds of rows, each with its
    arguments, is megabytes to render and to re-sync over the socket, and no reviewer works
    it as a list."""

    rows: list[Escalation]
    total: int


def inbox_page(user: Any, *, order: str = PendingOrder.EXPIRES) -> InboxPage:
    """One query while fewer than the cap are open, two beyond."""
    now = timezone.now()
    cap = settings.CONSOLE_INBOX_ROWS
    rows = list(pending_for(user, now=now, order=order)[: cap + 1])
    if len(rows) <= cap:
        return InboxPage(rows=rows, total=len(rows))
    return InboxPage(rows=rows[:cap], total=pending_count(user, now=now))


def pending_count(user: Any, *, now: datetime | None = None) -> int:
    """One COUNT query. Rows past expires_at never count, swept or not."""
    now = now or timezone.now()
    return (
        escalations_visible_to(user)
        .filter(status=EscalationStatus.PENDING, expires_at__gt=now)
        .count()
    )


COUNTER_EXPIRIES_MAX = 200


@dataclass(frozen=True)
class PendingCounter:
    """The nav counter: how many are open now, and when the soonest of them expire, so the
    page can stop counting a row the moment it expires (the sweep may run seconds later)."""

    count: int
    expiries: tuple[datetime, ...]
    now: datetime


def _soonest(rows: QuerySet[Escalation]) -> QuerySet[Escalation]:
    expiries = rows.order_by("expires_at").values_list("expires_at", flat=True)
    return expiries[: COUNTER_EXPIRIES_MAX + 1]  # type: ignore[return-value]


# The counter's first query, for the two kinds of reviewer (escalations_visible_to).
_soonest_for_all = PreparedQuery(
    Escalation,
    lambda now: _soonest(Escalation.objects.filter(_open(now))),
    now=DateTimeField(),
)
_soonest_in_scope = PreparedQuery(
    Escalation,
    lambda now, user_id: _soonest(Escalation.objects.filter(_open(now), _scope_filter(user_id))),
    now=DateTimeField(),
    user_id=models.IntegerField(),
)


def _open(now: datetime) -> Q:
    return Q(status=EscalationStatus.PENDING, expires_at__gt=now)


def pending_counter(user: Any, *, now: datetime | None = None) -> PendingCounter:
    """One query while at most COUNTER_EXPIRIES_MAX are open, two beyond."""
    now = now or timezone.now()
    if not is_reviewer(user):
        return PendingCounter(count=0, expiries=(), now=now)
    if is_admin(user):
        soonest: list[datetime] = _soonest_for_all(now=now)  # type: ignore[assignment]
    else:
        soonest = _soonest_in_scope(now=now, user_id=user.pk)  # type: ignore[assignment]
    if len(soonest) <= COUNTER_EXPIRIES_MAX:
        return PendingCounter(count=len(soonest), expiries=tuple(soonest), now=now)
    count = escalations_visible_to(user).filter(_open(now)).count()
    return PendingCounter(count=count, expiries=tuple(soonest[:COUNTER_EXPIRIES_MAX]), now=now)


def pending_row(user: Any, pk: UUID | str, *, now: datetime | None = None) -> Escalation | None:
    return pending_for(user, now=now).filter(pk=pk).first()


@dataclass(frozen=True)
class InboxRow:
    """One escalation as every reviewer's inbox row shows it (vote count, hook name), and
    each reviewer's vote: read once for all the reviewers a change is pushed to."""

    escalation: Escalation
    votes: dict[int, str]

    def for_reviewer(self, user: Any, *, with_vote: bool = True) -> Escalation:
        """The row as `user` sees it (`my_vote` as `_with_votes` sets it); a copy."""
        row = copy.copy(self.escalation)
        row.my_vote = self.votes.get(user.pk) if with_vote else None  # type: ignore[attr-defined]
        return row


def _inbox_row(pk: UUID) -> QuerySet[Escalation]:
    vote = Concat(Cast("votes__reviewer_id", CharField()), Value(":"), "votes__outcome")
    return (
        Escalation.objects.select_related("agent")
        .annotate(
            approvals=Count("votes", filter=Q(votes__outcome=VoteOutcome.APPROVE)),
            hook_name=hook_name_by_key("hook_key"),
            voters=StringAgg(vote, Value(","), filter=Q(votes__isnull=False)),
        )
        .filter(pk=pk)
        .order_by()[:1]
    )


_inbox_row_query = PreparedQuery(Escalation, _inbox_row, pk=UUIDField())


def inbox_row(pk: UUID | str) -> InboxRow | None:
    """One query, whoever will be shown the row (see ReviewerReach.sees)."""
    escalation: Any = _inbox_row_query.first(pk=_uuid(pk))
    if escalation is None:
        return None
    pairs = (voter.split(":") for voter in (escalation.voters or "").split(",") if voter)
    return InboxRow(escalation=escalation, votes={int(user): outcome for user, outcome in pairs})


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
    qs = _with_votes(escalations_visible_to(user).select_related("agent"), user)
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
