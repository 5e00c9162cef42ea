"""Data minimization: the payload of decided escalations is purged, the metadata kept."""

from __future__ import annotations

from datetime import timedelta

from approvals import services
from approvals.models import EscalationStatus
from approvals.wire import resolution, resolution_wire
from console.governance.models import GovernanceEvent
from tests.approvals.conftest import TOOL_SCHEMA


def test_payload_is_purged_after_the_configured_days_keeping_metadata(escalate, rita, settings):
    settings.CONSOLE_ESCALATION_PURGE_DAYS = 7
    escalation = escalate(transcript="user: restart api", tool_schema=TOOL_SCHEMA)
    services.escalation_decide(
        escalation=escalation, actor=rita, outcome="approve", args={"service": "web"}
    )
    escalation.refresh_from_db()
    six_days = escalation.decided_at + timedelta(days=6)
    assert services.escalation_purge_payloads(now=six_days) == 0

    eight_days = escalation.decided_at + timedelta(days=8)
    assert services.escalation_purge_payloads(now=eight_days) == 1
    escalation.refresh_from_db()
    assert escalation.context is None and escalation.arguments is None
    assert escalation.transcript == "" and escalation.approved_arguments is None
    assert escalation.tool_schema is None and escalation.verdict_message == ""
    assert escalation.payload_purged_at == eight_days
    # metadata stays
    assert escalation.status == EscalationStatus.APPROVED and escalation.decided_by == rita
    assert escalation.tool_name == "restart_service" and escalation.arguments_edited
    assert escalation.context_identity
    event = GovernanceEvent.objects.get(action="escalation.payload_purged")
    assert event.object_id == str(escalation.pk)
    assert services.escalation_purge_payloads(now=eight_days) == 0  # once


def test_pending_escalations_are_never_purged(escalate):
    escalation = escalate()
    assert services.escalation_purge_payloads(now=escalation.expires_at + timedelta(days=90)) == 0
    escalation.refresh_from_db()
    assert escalation.arguments == {"service": "api"}


def test_expired_escalations_are_purged_from_their_expiry(escalate, settings):
    settings.CONSOLE_ESCALATION_PURGE_DAYS = 1
    escalation = escalate()
    services.escalation_expire_overdue(now=escalation.expires_at)
    assert services.escalation_purge_payloads(now=escalation.expires_at + timedelta(days=2)) == 1


def test_a_purged_edit_never_resolves_to_the_original_arguments(escalate, rita, settings):
    settings.CONSOLE_ESCALATION_PURGE_DAYS = 0
    escalation = escalate()
    services.escalation_decide(
        escalation=escalation, actor=rita, outcome="approve", args={"service": "web"}
    )
    escalation.refresh_from_db()
    services.escalation_purge_payloads(now=escalation.decided_at + timedelta(seconds=1))
    escalation.refresh_from_db()
    wire = resolution_wire(resolution(escalation))
    assert wire["outcome"] == "reject"
    assert wire["verdict"]["decision"] == "deny"
