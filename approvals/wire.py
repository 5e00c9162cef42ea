"""JSON projections of escalations: the agent's status answer (with the SDK resolution wire)
and the reviewer's list item.

The resolution is built from the SDK's own types (ApprovalResolution, Verdict, Transform), so
what the agent's resolver parses is what the SDK would produce.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agent_hooks import ApprovalOutcome, ApprovalResolution, Decision, Transform, Verdict
from django.utils import timezone

from approvals.models import Escalation, EscalationStatus
from approvals.selectors import effective_status

REASON_REJECTED = "reviewer_rejected"
REASON_EXPIRED = "approval_expired"
REASON_CANCELLED = "approval_cancelled"
REASON_PURGED = "approval_payload_purged"
# pre_tool_call's transform target is the tool-call `args` object itself (agent_framework's
# _ToolArgumentsCodec): `$target` replaces the arguments whole, so the agent runs exactly them.
ARGUMENTS_PATH = "$target"


def iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _approve_verdict(escalation: Escalation) -> Verdict:
    if not escalation.arguments_edited:
        return Verdict.allow()
    if escalation.approved_arguments is None:
        # The edited arguments were purged: never let the original ones run instead.
        return Verdict.deny(
            reason=REASON_PURGED, message="The approved arguments are no longer stored."
        )
    return Verdict(
        decision=Decision.TRANSFORM,
        transform=Transform(path=ARGUMENTS_PATH, value=escalation.approved_arguments),
    )


def resolution(escalation: Escalation, *, now: datetime | None = None) -> ApprovalResolution | None:
    status = effective_status(escalation, now)
    identity = escalation.context_identity
    if status == EscalationStatus.PENDING:
        return None
    if status == EscalationStatus.APPROVED:
        verdict = _approve_verdict(escalation)
        outcome = ApprovalOutcome.APPROVE if verdict.decision.permits else ApprovalOutcome.REJECT
        return ApprovalResolution(outcome, identity, verdict)
    if status == EscalationStatus.REJECTED:
        message = escalation.decision_reason or "A reviewer rejected this call."
        verdict = Verdict.deny(reason=REASON_REJECTED, message=message)
    elif status == EscalationStatus.EXPIRED:
        verdict = Verdict.deny(
            reason=REASON_EXPIRED, message="No reviewer decided before the escalation expired."
        )
    else:
        message = escalation.decision_reason or "The escalation was cancelled."
        verdict = Verdict.deny(reason=REASON_CANCELLED, message=message)
    return ApprovalResolution(ApprovalOutcome.REJECT, identity, verdict)


def resolution_wire(resolution_: ApprovalResolution | None) -> dict[str, Any] | None:
    if resolution_ is None:
        return None
    wire: dict[str, Any] = {
        "outcome": resolution_.outcome.value,
        "context_identity": resolution_.context_identity,
    }
    if resolution_.verdict is not None:
        wire["verdict"] = resolution_.verdict.to_wire()
    return wire


def status_answer(escalation: Escalation, *, now: datetime | None = None) -> dict[str, Any]:
    """`GET /api/v1/escalations/{id}`: what the agent's resolver reads."""
    now = now or timezone.now()
    status = effective_status(escalation, now)
    decided = status != EscalationStatus.PENDING
    reason = escalation.decision_reason if status != EscalationStatus.EXPIRED else REASON_EXPIRED
    decided_at = escalation.decided_at
    if status == EscalationStatus.EXPIRED and decided_at is None:
        decided_at = escalation.expires_at
    return {
        "id": str(escalation.pk),
        "status": status,
        "resolution": resolution_wire(resolution(escalation, now=now)),
        "decided_by": escalation.decided_by_label or None if decided else None,
        "decided_at": iso(decided_at) if decided else None,
        "reason": (reason or None) if decided else None,
        "expires_at": iso(escalation.expires_at),
    }


def created_answer(escalation: Escalation, *, now: datetime | None = None) -> dict[str, Any]:
    return {
        "id": str(escalation.pk),
        "status": effective_status(escalation, now),
        "expires_at": iso(escalation.expires_at),
    }


def list_item(escalation: Escalation, *, now: datetime | None = None) -> dict[str, Any]:
    """One row of the reviewer's list."""
    return {
        "id": str(escalation.pk),
        "status": effective_status(escalation, now),
        "agent": escalation.agent.slug,
        "custom_agent": escalation.custom_agent_name or None,
        "interception_point": escalation.interception_point,
        "tool_name": escalation.tool_name or None,
        "arguments": escalation.arguments,
        "hook": escalation.hook_key or None,
        "reason": escalation.verdict_reason or None,
        "message": escalation.verdict_message or None,
        "session_id": escalation.session_id or None,
        "turn": escalation.turn,
        "approvals_required": escalation.approvals_required,
        "approvals": getattr(escalation, "approvals", None),
        "created_at": iso(escalation.created_at),
        "expires_at": iso(escalation.expires_at),
        "decided_by": escalation.decided_by_label or None,
        "decided_at": iso(escalation.decided_at),
        "decision_reason": escalation.decision_reason or None,
        "arguments_edited": escalation.arguments_edited,
        "payload_purged": escalation.payload_purged,
    }
