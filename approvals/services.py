"""Writes of the approvals app: create, decide (vote), expire, cancel, purge; reviewer scopes.

Every state change is one transaction with its governance event; wake-ups and webhooks are
sent after commit. Decisions are claims: a conditional update on `status=pending` and
`expires_at > now`, taken under a row lock so M-of-N votes count one at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from agents.models import Agent
from agents.selectors import hook_names
from approvals import live
from approvals.models import (
    Escalation,
    EscalationStatus,
    EscalationVote,
    ReviewerScope,
    SlackIdentity,
    VoteOutcome,
)
from approvals.notifications import schedule_webhook
from approvals.rules import approval_rule_for_request
from approvals.selectors import (
    escalation_by_identity,
    escalation_locked,
    escalation_locked_for,
    reviewer_may_decide,
    votes_cast,
)
from approvals.validation import validate_arguments, validate_meta, validate_request
from approvals.wire import REASON_EXPIRED
from console.actors import Actor, actor_label, actor_user, is_agent
from console.errors import Conflict, Forbidden, InvalidInput, pointer
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record
from console.roles import is_admin, is_reviewer

BATCH = 500
TOOL_POINTS = ("pre_tool_call", "post_tool_call")
DECIDED_ACTIONS: dict[str, GovernanceAction] = {
    EscalationStatus.APPROVED: GovernanceAction.ESCALATION_APPROVED,
    EscalationStatus.REJECTED: GovernanceAction.ESCALATION_REJECTED,
}
# A Slack member ID as the profile's "Copy member ID" gives it: U… (or W… on Enterprise Grid).
SLACK_MEMBER_ID = re.compile(r"[UW][A-Z0-9]{2,31}")


@dataclass(frozen=True)
class DecisionResult:
    escalation: Escalation
    vote: EscalationVote
    final: bool


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _facts(request: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    context = _object(request.get("context"))
    tool_call = _object(context.get("tool_call"))
    session = _object(context.get("session"))
    agent_info = _object(context.get("agent"))
    arguments = tool_call.get("args") if request["interception_point"] in TOOL_POINTS else None
    turn = meta.get("turn", session.get("turn"))
    return {
        "context": request.get("context"),
        "arguments": arguments if isinstance(arguments, dict) else None,
        "tool_name": str(meta.get("tool_name") or tool_call.get("name") or "")[:200],
        "session_id": str(meta.get("session_id") or session.get("id") or "")[:200],
        "turn": turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
        "framework": str(meta.get("framework") or agent_info.get("framework") or "")[:64],
        "cwd": str(meta.get("cwd") or "")[:1024],
    }


def escalation_create(
    *, actor: Actor | None, request: Any, meta: Any, now: datetime | None = None
) -> tuple[Escalation, bool]:
    """Store an agent's approval request; the same context_identity returns the first one.

    The approval rule (how many approvals, how long) comes from the console's configuration
    for the requested tool, never from the request (approvals/rules.py)."""
    if not is_agent(actor):
        raise Forbidden("Only an agent token may open an escalation.")
    fields = {**validate_request(request), **validate_meta(meta)}
    if fields:
        raise InvalidInput("The escalation is invalid.", fields=fields)
    meta = meta or {}
    agent: Agent = actor.agent
    identity = request["context_identity"]
    if identity is not None:
        existing = escalation_by_identity(agent, identity)
        if existing is not None:
            return existing, False
    custom_agent, rule = approval_rule_for_request(agent, request, meta)
    required = rule.approvals_required
    now = now or timezone.now()
    try:
        with transaction.atomic():
            escalation = Escalation.objects.create(
                agent=agent,
                custom_agent_name=custom_agent.name if custom_agent else "",
                hook=rule.hook,
                hook_key=rule.hook.key,
                context_identity=identity,
                interception_point=request["interception_point"],
                revision=meta.get("revision"),
                verdict_reason=str(request["verdict"].get("reason") or "")[:200],
                verdict_message=str(request["verdict"].get("message") or ""),
                approvals_required=required,
                expires_at=now + timedelta(seconds=rule.expires_in),
                transcript=meta.get("transcript") or "",
                tool_schema=meta.get("tool_schema"),
                **_facts(request, meta),
            )
            what = escalation.tool_name or escalation.interception_point
            governance_event_record(
                actor=actor,
                action=GovernanceAction.ESCALATION_CREATED,
                summary=f"{agent.slug} asked reviewers to approve {what}"
                + (f" (hook {_hook_label(rule.hook.key, rule.hook)})" if rule.hook.key else ""),
                agent=agent,
                target=escalation,
                after={
                    "status": escalation.status,
                    "tool_name": escalation.tool_name,
                    "hook": escalation.hook_key,
                    "approvals_required": required,
                    "expires_at": escalation.expires_at.isoformat(),
                    # The approval hooks whose strictest settings apply (empty: the default).
                    "rule_hooks": [hook.key for hook in rule.rule_hooks],
                },
            )
            live.on_commit_changed(escalation.pk, "created")
            schedule_webhook(escalation, "escalation.created")
    except IntegrityError:
        # A concurrent retry with the same identity won the insert.
        existing = escalation_by_identity(agent, identity)
        if existing is None:
            raise
        return existing, False
    return escalation, True


def _decider_locked(escalation: Escalation, actor: Actor | None) -> tuple[User, Escalation]:
    """The person deciding and the escalation row locked for their vote. Forbidden for an
    agent, the system, a non-reviewer or a reviewer whose scope leaves out the agent: the
    lock query itself reads only rows the reviewer may decide (one query for both)."""
    if is_agent(actor):
        raise Forbidden("Agents never decide escalations, not even their own.")
    forbidden = Forbidden("You may not decide escalations of this agent.")
    if actor is None or not is_reviewer(actor):
        raise forbidden

    locked = escalation_locked_for(actor, escalation.pk)
    if locked is None:
        if not reviewer_may_decide(actor, escalation.agent_id):
            raise forbidden
        locked = escalation_locked(escalation.pk)  # the scope changed meanwhile, or gone
    return actor, locked


def _checked_arguments(escalation: Escalation, args: Any) -> dict[str, Any]:
    if escalation.interception_point != "pre_tool_call":
        raise InvalidInput(
            "Only a tool call's arguments can be edited.",
            fields={pointer("args"): ["This escalation is not a pre_tool_call."]},
        )
    fields = validate_arguments(args, escalation.tool_schema)
    if fields:
        raise InvalidInput("The edited arguments are invalid.", fields=fields)
    return dict(args)


def _conflict_if_closed(escalation: Escalation, now: datetime) -> None:
    if escalation.status != EscalationStatus.PENDING:
        raise Conflict(f"The escalation is already {escalation.status}.")
    if escalation.expires_at <= now:
        raise Conflict("The escalation expired; no decision is accepted after expiry.")


def _hook_label(key: str, hook: Any = None) -> str:
    """`hook`: the Hook row of `key` when the caller holds it already (no query)."""
    name = hook.name if hook is not None else hook_names([key]).get(key)
    return f"\u201c{name}\u201d ({key})" if name else key


@transaction.atomic
def escalation_decide(
    *,
    escalation: Escalation,
    actor: Actor | None,
    outcome: str,
    reason: str = "",
    args: Any = None,
    now: datetime | None = None,
) -> DecisionResult:
    """One reviewer's vote. A rejection vetoes; the approvalsRequired-th approval approves."""
    reviewer, locked = _decider_locked(escalation, actor)
    reason = (reason or "").strip()
    if outcome not in VoteOutcome.values:
        raise InvalidInput(
            "The decision is invalid.", fields={"/outcome": ["Must be approve or reject."]}
        )
    if outcome == VoteOutcome.REJECT and not reason:
        raise InvalidInput(
            "A rejection needs a reason.", fields={"/reason": ["A reason is required."]}
        )
    if outcome == VoteOutcome.REJECT and args is not None:
        raise InvalidInput(
            "Only an approval carries arguments.", fields={"/args": ["Not on reject."]}
        )
    now = now or timezone.now()
    _conflict_if_closed(locked, now)
    votes = votes_cast(locked)
    if any(reviewer_id == reviewer.pk for reviewer_id, _ in votes):
        raise Conflict("You already voted on this escalation.")
    approvals = sum(1 for _, vote_outcome in votes if vote_outcome == VoteOutcome.APPROVE)
    current = locked.approved_arguments if locked.arguments_edited else locked.arguments
    proposal: dict[str, Any] | None = None
    if args is not None:
        proposal = _checked_arguments(locked, args)
        if approvals and proposal != current:
            raise Conflict("Other reviewers approved different arguments; approve those or reject.")
    edited = proposal is not None and proposal != locked.arguments
    vote = EscalationVote.objects.create(
        escalation=locked,
        reviewer=reviewer,
        reviewer_label=actor_label(reviewer),
        outcome=outcome,
        reason=reason,
        arguments_edited=edited or (locked.arguments_edited and outcome == VoteOutcome.APPROVE),
    )
    final = outcome == VoteOutcome.REJECT or approvals + 1 >= locked.approvals_required
    changes: dict[str, Any] = {}
    if outcome == VoteOutcome.APPROVE and proposal is not None and not approvals:
        changes = {"arguments_edited": edited, "approved_arguments": proposal if edited else None}
    if final:
        status = (
            EscalationStatus.REJECTED
            if outcome == VoteOutcome.REJECT
            else EscalationStatus.APPROVED
        )
        changes.update(
            status=status,
            decided_by=actor_user(actor),
            decided_by_label=actor_label(actor),
            decided_at=now,
            decision_reason=reason,
        )
    if changes:
        claimed = Escalation.objects.filter(
            pk=locked.pk, status=EscalationStatus.PENDING, expires_at__gt=now
        ).update(**changes)
        if claimed == 0:
            raise Conflict("Someone else decided this escalation first.")
        for field, value in changes.items():
            setattr(locked, field, value)
    _record_vote(locked, vote, actor, approvals + 1, final)
    live.on_commit_changed(locked.pk, "decided" if final else "updated")
    if final:
        schedule_webhook(locked, f"escalation.{locked.status}")
    return DecisionResult(escalation=locked, vote=vote, final=final)


def _record_vote(
    escalation: Escalation, vote: EscalationVote, actor: Actor | None, approvals: int, final: bool
) -> None:
    what = escalation.tool_name or escalation.interception_point
    tally = f"{approvals}/{escalation.approvals_required}"
    if vote.outcome == VoteOutcome.REJECT:
        summary = f"{actor_label(actor)} rejected {what} for {escalation.agent.slug}"
    else:
        summary = f"{actor_label(actor)} approved {what} for {escalation.agent.slug} ({tally})"
    if vote.arguments_edited:
        summary += ", arguments edited"
    governance_event_record(
        actor=actor,
        action=DECIDED_ACTIONS[escalation.status] if final else GovernanceAction.ESCALATION_VOTED,
        summary=summary,
        agent=escalation.agent,
        target=escalation,
        before={"status": EscalationStatus.PENDING.value},
        after={
            "status": escalation.status,
            "vote": vote.outcome,
            "approvals": approvals if vote.outcome == VoteOutcome.APPROVE else None,
            "approvals_required": escalation.approvals_required,
            # That a transform happened, never its value.
            "arguments_edited": vote.arguments_edited,
        },
    )


def _expire_batch(now: datetime) -> int:
    with transaction.atomic():
        ids = list(
            Escalation.objects.select_for_update(skip_locked=True)
            .filter(status=EscalationStatus.PENDING, expires_at__lte=now)
            .order_by("expires_at")
            .values_list("pk", flat=True)[:BATCH]
        )
        if not ids:
            return 0
        Escalation.objects.filter(
            pk__in=ids, status=EscalationStatus.PENDING, expires_at__lte=now
        ).update(
            status=EscalationStatus.EXPIRED,
            decided_at=F("expires_at"),
            decision_reason=REASON_EXPIRED,
        )
        for escalation in Escalation.objects.filter(pk__in=ids).select_related("agent"):
            governance_event_record(
                actor=None,
                action=GovernanceAction.ESCALATION_EXPIRED,
                summary=f"{escalation.tool_name or escalation.interception_point} for "
                f"{escalation.agent.slug} expired undecided",
                agent=escalation.agent,
                target=escalation,
                before={"status": EscalationStatus.PENDING.value},
                after={"status": EscalationStatus.EXPIRED.value},
            )
            live.on_commit_changed(escalation.pk, "decided")
            schedule_webhook(escalation, "escalation.expired")
        return len(ids)


def escalation_expire_overdue(*, now: datetime | None = None) -> int:
    """Mark every pending escalation past expires_at expired (the periodic sweep)."""
    now = now or timezone.now()
    total = 0
    for _ in range(100):  # bounded: 100 batches per sweep, the next sweep takes the rest
        expired = _expire_batch(now)
        total += expired
        if expired < BATCH:
            break
    return total


@transaction.atomic
def escalation_cancel(*, escalation: Escalation, actor: Actor | None, reason: str) -> Escalation:
    """An admin withdraws a pending escalation; the agent gets a deny."""
    if not is_admin(actor):
        raise Forbidden("Only admins may cancel escalations.")
    now = timezone.now()
    claimed = Escalation.objects.filter(pk=escalation.pk, status=EscalationStatus.PENDING).update(
        status=EscalationStatus.CANCELLED,
        decided_by=actor_user(actor),
        decided_by_label=actor_label(actor),
        decided_at=now,
        decision_reason=reason.strip(),
    )
    if claimed == 0:
        raise Conflict("Only a pending escalation can be cancelled.")
    escalation.refresh_from_db()
    governance_event_record(
        actor=actor,
        action=GovernanceAction.ESCALATION_CANCELLED,
        summary=f"{actor_label(actor)} cancelled the escalation of "
        f"{escalation.tool_name or escalation.interception_point}",
        agent=escalation.agent,
        target=escalation,
        before={"status": EscalationStatus.PENDING.value},
        after={"status": EscalationStatus.CANCELLED.value},
    )
    live.on_commit_changed(escalation.pk, "decided")
    return escalation


PAYLOAD_CLEARED: dict[str, Any] = {
    "context": None,
    "arguments": None,
    "verdict_message": "",
    "transcript": "",
    "tool_schema": None,
    "approved_arguments": None,
}


def _purge_batch(cutoff: datetime, now: datetime) -> int:
    with transaction.atomic():
        ids = list(
            Escalation.objects.select_for_update(skip_locked=True)
            .filter(payload_purged_at__isnull=True, decided_at__lte=cutoff)
            .exclude(status=EscalationStatus.PENDING)
            .values_list("pk", flat=True)[:BATCH]
        )
        if not ids:
            return 0
        Escalation.objects.filter(pk__in=ids).update(**PAYLOAD_CLEARED, payload_purged_at=now)
        for escalation in Escalation.objects.filter(pk__in=ids).select_related("agent"):
            governance_event_record(
                actor=None,
                action=GovernanceAction.ESCALATION_PAYLOAD_PURGED,
                summary=f"Purged the payload of a {escalation.status} escalation of "
                f"{escalation.tool_name or escalation.interception_point} "
                f"({settings.CONSOLE_ESCALATION_PURGE_DAYS} days after the decision)",
                agent=escalation.agent,
                target=escalation,
            )
        return len(ids)


def escalation_purge_payloads(*, now: datetime | None = None) -> int:
    """Drop context, arguments and transcript of escalations decided long enough ago."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.CONSOLE_ESCALATION_PURGE_DAYS)
    total = 0
    for _ in range(100):
        purged = _purge_batch(cutoff, now)
        total += purged
        if purged < BATCH:
            break
    return total


@transaction.atomic
def reviewer_scope_set(
    *, actor: Actor | None, user: User, agents: list[Agent]
) -> list[ReviewerScope]:
    """Restrict `user` to `agents` (an empty list lifts the restriction)."""
    if actor is not None and not is_admin(actor):
        raise Forbidden("Only admins may restrict reviewers.")
    before = sorted(ReviewerScope.objects.filter(user=user).values_list("agent__slug", flat=True))
    ReviewerScope.objects.filter(user=user).delete()
    scopes = [ReviewerScope.objects.create(user=user, agent=agent) for agent in agents]
    governance_event_record(
        actor=actor,
        action=GovernanceAction.REVIEWER_SCOPE_SET,
        summary=f"Reviewer {user.username} restricted to "
        + (", ".join(sorted(a.slug for a in agents)) or "all agents"),
        target=user,
        before={"agents": before},
        after={"agents": sorted(a.slug for a in agents)},
    )
    live.on_commit_access_changed(user.pk)
    return scopes


@transaction.atomic
def slack_identity_set(
    *, actor: Actor | None, user: User, slack_user_id: str
) -> SlackIdentity | None:
    """Link `user` to a Slack member ID (their Slack clicks then act as them); "" unlinks."""
    if actor is not None and not is_admin(actor):
        raise Forbidden("Only admins may link Slack accounts.")
    wanted = slack_user_id.strip()
    at = pointer("slack_user_id")
    if wanted and not SLACK_MEMBER_ID.fullmatch(wanted):
        raise InvalidInput(
            "Not a Slack member ID.", fields={at: ["A member ID looks like U012AB3CD (or W…)."]}
        )
    taken = SlackIdentity.objects.filter(slack_user_id=wanted).exclude(user=user).first()
    if wanted and taken is not None:
        raise InvalidInput(
            "That Slack member is linked to someone else.",
            fields={at: [f"Already linked to {taken.user}."]},
        )
    current = SlackIdentity.objects.filter(user=user).first()
    before = current.slack_user_id if current else ""
    if before == wanted:
        return current
    SlackIdentity.objects.filter(user=user).delete()
    identity = SlackIdentity.objects.create(user=user, slack_user_id=wanted) if wanted else None
    governance_event_record(
        actor=actor,
        action=GovernanceAction.REVIEWER_SLACK_SET,
        summary=f"Slack member of {user.username}: {wanted or 'none'}",
        target=user,
        before={"slack_user_id": before or None},
        after={"slack_user_id": wanted or None},
    )
    return identity
