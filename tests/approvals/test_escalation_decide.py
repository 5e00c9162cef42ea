"""approvals.services.escalation_decide: exactly once, M-of-N with veto, edits, expiry, scope."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.models import Escalation, EscalationStatus, EscalationVote
from approvals.wire import resolution, resolution_wire
from console.errors import Conflict, Forbidden, InvalidInput
from console.governance.models import GovernanceEvent
from tests.approvals.conftest import TOOL_SCHEMA, approval_hook, make_reviewer, resolution_errors


def decide(escalation: Escalation, actor, outcome="approve", reason="", **kwargs):
    return services.escalation_decide(
        escalation=escalation, actor=actor, outcome=outcome, reason=reason, **kwargs
    )


def test_approval_decides_and_resolution_allows(escalate, rita):
    escalation = escalate()
    result = decide(escalation, rita, "approve", "looks fine")
    assert result.final
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    assert escalation.decided_by == rita and escalation.decided_by_label == "rita"
    wire = resolution_wire(resolution(escalation))
    assert wire == {
        "outcome": "approve",
        "context_identity": escalation.context_identity,
        "verdict": {"decision": "allow"},
    }
    assert resolution_errors(wire) == []


def test_rejection_carries_the_reviewers_reason(escalate, rita):
    escalation = escalate()
    decide(escalation, rita, "reject", "not during the freeze")
    escalation.refresh_from_db()
    wire = resolution_wire(resolution(escalation))
    assert wire["outcome"] == "reject"
    assert wire["verdict"] == {
        "decision": "deny",
        "reason": "reviewer_rejected",
        "message": "not during the freeze",
    }
    assert resolution_errors(wire) == []


def test_rejection_needs_a_reason(escalate, rita):
    escalation = escalate()
    with pytest.raises(InvalidInput) as caught:
        decide(escalation, rita, "reject", "   ")
    assert "/reason" in caught.value.fields
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING
    assert not EscalationVote.objects.exists()


def test_second_decision_is_refused_and_changes_nothing(escalate, rita, alice):
    escalation = escalate()
    decide(escalation, rita, "approve")
    with pytest.raises(Conflict):
        decide(escalation, alice, "approve")
    with pytest.raises(Conflict):
        decide(escalation, alice, "reject", "changed my mind")
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    assert escalation.decided_by == rita
    assert EscalationVote.objects.count() == 1


def test_late_decision_after_expiry_is_refused_even_before_the_sweep(escalate, rita):
    escalation = escalate()
    later = escalation.expires_at + timedelta(seconds=1)
    with pytest.raises(Conflict, match="expired"):
        decide(escalation, rita, "approve", now=later)
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING  # the sweep marks it, not the refusal
    assert not EscalationVote.objects.exists()


def test_late_decision_with_the_real_clock_moved_forward(escalate, rita, monkeypatch):
    escalation = escalate()
    frozen = escalation.expires_at + timedelta(minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: frozen)
    with pytest.raises(Conflict):
        decide(escalation, rita, "approve")


def test_two_of_three_needs_two_distinct_reviewers(sre, escalate, rita, alice):
    hook = approval_hook(sre, approvalsRequired=2)
    escalation = escalate(hook=hook.key)
    first = decide(escalation, rita, "approve")
    assert not first.final
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING
    with pytest.raises(Conflict, match="already voted"):
        decide(escalation, rita, "approve")
    second = decide(escalation, alice, "approve")
    assert second.final
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    assert escalation.decided_by == alice
    actions = list(
        GovernanceEvent.objects.filter(action__startswith="escalation.")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["escalation.created", "escalation.voted", "escalation.approved"]


def test_one_rejection_vetoes_earlier_approvals(sre, escalate, rita, alice):
    hook = approval_hook(sre, approvalsRequired=3)
    escalation = escalate(hook=hook.key)
    decide(escalation, rita, "approve")
    result = decide(escalation, alice, "reject", "too risky")
    assert result.final
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.REJECTED
    assert escalation.decision_reason == "too risky"
    with pytest.raises(Conflict):
        decide(escalation, make_reviewer("ruth"), "approve")


def test_edited_arguments_are_validated_against_the_tool_schema(escalate, rita):
    escalation = escalate(tool_schema=TOOL_SCHEMA)
    with pytest.raises(InvalidInput) as caught:
        decide(escalation, rita, "approve", args={"service": "api", "replicas": 99})
    assert "/args/replicas" in caught.value.fields
    with pytest.raises(InvalidInput) as caught:
        decide(escalation, rita, "approve", args=["not", "an", "object"])
    assert "/args" in caught.value.fields
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_edit_then_approve_resolves_to_a_target_transform(escalate, rita):
    escalation = escalate(args={"service": "api", "replicas": 3}, tool_schema=TOOL_SCHEMA)
    result = decide(escalation, rita, "approve", args={"service": "api", "replicas": 1})
    assert result.final and result.vote.arguments_edited
    escalation.refresh_from_db()
    assert escalation.arguments_edited
    wire = resolution_wire(resolution(escalation))
    assert wire["outcome"] == "approve"
    assert wire["verdict"] == {
        "decision": "transform",
        "transform": {"path": "$target", "value": {"service": "api", "replicas": 1}},
    }
    assert resolution_errors(wire) == []
    event = GovernanceEvent.objects.get(action="escalation.approved")
    assert event.after["arguments_edited"] is True
    assert "replicas" not in str(event.after) and "replicas" not in event.summary


def test_unchanged_arguments_are_not_an_edit(escalate, rita):
    escalation = escalate(args={"service": "api"})
    decide(escalation, rita, "approve", args={"service": "api"})
    escalation.refresh_from_db()
    assert not escalation.arguments_edited
    assert resolution_wire(resolution(escalation))["verdict"] == {"decision": "allow"}


def test_m_of_n_approvers_must_agree_on_edited_arguments(sre, escalate, rita, alice):
    hook = approval_hook(sre, approvalsRequired=2)
    escalation = escalate(hook=hook.key, args={"service": "api"})
    decide(escalation, rita, "approve", args={"service": "web"})
    with pytest.raises(Conflict, match="different arguments"):
        decide(escalation, alice, "approve", args={"service": "db"})
    decide(escalation, alice, "approve")  # approves the proposal as shown
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    assert escalation.approved_arguments == {"service": "web"}


def test_agents_never_decide(escalate, sre):
    from console.actors import AgentPrincipal

    escalation = escalate()
    principal = AgentPrincipal(agent=sre.agent, token=sre.agent.tokens.first())
    with pytest.raises(Forbidden):
        decide(escalation, principal, "approve")


def test_auditors_and_outsiders_cannot_decide(escalate, audrey, charlie):
    escalation = escalate()
    for person in (audrey, charlie):
        with pytest.raises(Forbidden):
            decide(escalation, person, "approve")
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_reviewer_restricted_to_another_agent_cannot_decide(escalate, sre, other, rita, alice):
    services.reviewer_scope_set(actor=alice, user=rita, agents=[other.agent])
    escalation = escalate()
    with pytest.raises(Forbidden):
        decide(escalation, rita, "approve")
    services.reviewer_scope_set(actor=alice, user=rita, agents=[sre.agent])
    assert decide(escalation, rita, "approve").final


def test_each_vote_writes_a_governance_event(escalate, rita):
    escalation = escalate()
    decide(escalation, rita, "reject", "no")
    event = GovernanceEvent.objects.get(action="escalation.rejected")
    assert event.actor == rita
    assert event.object_id == str(escalation.pk)
    assert event.before == {"status": "pending"}
    assert event.after["status"] == "rejected"
