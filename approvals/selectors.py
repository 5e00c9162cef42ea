"""Reads of the approvals app: who may see and decide which escalations, and list queries.

People see exactly the escalations they may decide: reviewers (optionally restricted to some
agents by ReviewerScope rows) and admins (all). Agents see only their own, by id.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
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

from agents.models import Agent
from agents.selectors import hook_name_by_key
from approvals.models import (
    Escalation,
    EscalationStatus,
    EscalationVote,
    ReviewerScope,
    SlackIdentity,
    VoteOutcome,
)
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


class _ByReach[R]:
    """A read of escalations in both shapes of escalations_visible_to (every row for
    admins, the scoped rows for other reviewers), each compiled once: `shape(rows, **args)`
    makes the query of those rows; `arguments` declares args' fields."""

    def __init__(
        self, shape: Callable[..., QuerySet[Escalation, R]], **arguments: models.Field[Any, Any]
    ) -> None:
        self.every = PreparedQuery(
            Escalation, lambda **args: shape(Escalation.objects.all(), **args), **arguments
        )
        self.in_scope = PreparedQuery(
            Escalation,
            lambda user_id, **args: shape(
                Escalation.objects.filter(_scope_filter(user_id)), **args
            ),
            user_id=models.IntegerField(),
            **arguments,
        )

    def rows(self, user: Any, **args: Any) -> list[R]:
        """What `user` may see of the read (nothing for non-reviewers)."""
        if not is_reviewer(user):
            return []
        if is_admin(user):
            return self.every(**args)
        return self.in_scope(user_id=user.pk, **args)

    def first(self, user: Any, **args: Any) -> R | None:
        rows = self.rows(user, **args)
        return rows[0] if rows else None


_visible: _ByReach[Escalation] = _ByReach(
    lambda rows, pk: rows.select_related("agent").filter(pk=pk)[:1], pk=UUIDField()
)
# The decision's row lock: the scope check and the lock in one query.
_lockable: _ByReach[Escalation] = _ByReach(
    lambda rows, pk: rows.select_for_update(of=("self",)).select_related("agent").filter(pk=pk)[:1],
    pk=UUIDField(),
)


def get_escalation_for_user(user: Any, pk: UUID | str, *, write: bool = False) -> Escalation:
    """The escalation if `user` may see it (people see exactly what they may decide); else 404."""
    escalation = _visible.first(user, pk=_uuid(pk))
    if escalation is None:
        raise Http404("No such escalation.")
    return escalation


def escalation_by_id(pk: UUID) -> Escalation | None:
    """The escalation with its agent, whoever asks (callers have checked access)."""
    return _visible.every.first(pk=pk)


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


def escalation_locked_for(user: Any, pk: UUID) -> Escalation | None:
    """The escalation row locked FOR UPDATE (in the caller's transaction) if `user` may
    decide it, else None: one query for the scope check and the lock."""
    return _lockable.first(user, pk=pk)


def escalation_locked(pk: UUID) -> Escalation:
    """The escalation row locked FOR UPDATE, whoever may decide it (DoesNotExist: gone)."""
    row = _lockable.every.first(pk=pk)
    if row is None:
        raise Escalation.DoesNotExist(f"escalation {pk} is gone")
    return row


_votes = PreparedQuery(
    EscalationVote,
    lambda escalation_id: (
        EscalationVote.objects.filter(escalation_id=escalation_id)
        .order_by("created_at", "id")
        .values_list("reviewer_id", "outcome")
    ),
    escalation_id=UUIDField(),
)


def votes_cast(escalation: Escalation) -> list[tuple[int, str]]:
    """(reviewer id, outcome) of each vote on `escalation`, oldest first."""
    return _votes(escalation_id=escalation.pk)


_by_identity = PreparedQuery(
    Escalation,
    lambda agent_id, identity: Escalation.objects.filter(
        agent_id=agent_id, context_identity=identity
    )[:1],
    agent_id=models.IntegerField(),
    identity=models.TextField(),
)


def escalation_by_identity(agent: Agent, identity: str) -> Escalation | None:
    """The agent's escalation of this context_identity (one per identity), if any."""
    return _by_identity.first(agent_id=agent.pk, identity=identity)


def effective_status(escalation: Escalation, now: datetime | None = None) -> str:
    """Pending past expires_at is expired, whether or not the sweep has run."""
    now = now or timezone.now()
    if escalation.status == EscalationStatus.PENDING and escalation.expires_at <= now:
        return EscalationStatus.EXPIRED.value
    return str(escalation.status)


def with_votes(qs: QuerySet[Escalation], user: Any) -> QuerySet[Escalation]:
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
    return with_votes(qs.select_related("agent"), user).order_by(*ordering)


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


def _soonest(rows: QuerySet[Escalation]) -> QuerySet[Escalation, datetime]:
    expiries = rows.order_by("expires_at").values_list("expires_at", flat=True)
    return expiries[: COUNTER_EXPIRIES_MAX + 1]


# The counter's first query: the soonest expiries of the open rows.
_soonest_open: _ByReach[datetime] = _ByReach(
    lambda rows, now: _soonest(rows.filter(_open(now))), now=DateTimeField()
)
# Its second, beyond COUNTER_EXPIRIES_MAX open rows: their number, as one row (every open
# row has the same status). Built by Django on every call it cost ~3 ms of Python against
# ~1 ms in PostgreSQL with 1,000 open rows (docs/benchmarks.md, eleventh pass).
_open_count: _ByReach[int] = _ByReach(
    lambda rows, now: (
        rows.filter(_open(now))
        .order_by()
        .values("status")
        .annotate(open=Count("pk"))
        .values_list("open", flat=True)
    ),
    now=DateTimeField(),
)


def _open(now: datetime) -> Q:
    return Q(status=EscalationStatus.PENDING, expires_at__gt=now)


def pending_counter(user: Any, *, now: datetime | None = None) -> PendingCounter:
    """One query while at most COUNTER_EXPIRIES_MAX are open, two beyond."""
    now = now or timezone.now()
    soonest = _soonest_open.rows(user, now=now)
    if len(soonest) <= COUNTER_EXPIRIES_MAX:
        return PendingCounter(count=len(soonest), expiries=tuple(soonest), now=now)
    count = sum(_open_count.rows(user, now=now))
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
        """The row as `user` sees it (`my_vote` as `with_votes` sets it); a copy."""
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
