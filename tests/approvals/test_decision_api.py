"""POST /api/v1/escalations/{id}/decision: reviewers only, once, validated, 409 on conflicts."""

from __future__ import annotations

import json
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from approvals import services
from approvals.models import EscalationStatus
from console import services as console_services
from tests.approvals.conftest import TOOL_SCHEMA


def post_decision(client: Client, escalation, body, **headers):
    return client.post(
        f"/api/v1/escalations/{escalation.pk}/decision",
        data=json.dumps(body),
        content_type="application/json",
        **headers,
    )


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_reviewer_session_approves(reviewer_client, escalate):
    escalation = escalate()
    response = post_decision(reviewer_client, escalation, {"outcome": "approve", "reason": "ok"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "approved" and body["final"] is True and body["decided_by"] == "rita"


def test_reviewer_personal_token_rejects(rita, escalate):
    escalation = escalate()
    token = console_services.api_token_issue(actor=None, user=rita).plaintext
    response = post_decision(
        Client(), escalation, {"outcome": "reject", "reason": "no"}, **bearer(token)
    )
    assert response.status_code == 200
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.REJECTED


def test_session_decisions_need_the_csrf_token(rita, escalate):
    escalation = escalate()
    client = Client(enforce_csrf_checks=True)
    client.force_login(rita)
    assert post_decision(client, escalation, {"outcome": "approve"}).status_code == 403
    client.get("/approvals/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = post_decision(client, escalation, {"outcome": "approve"}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200


def test_second_and_conflicting_decisions_get_409(reviewer_client, admin_client, escalate):
    escalation = escalate()
    assert post_decision(reviewer_client, escalation, {"outcome": "approve"}).status_code == 200
    again = post_decision(admin_client, escalation, {"outcome": "approve"})
    conflicting = post_decision(admin_client, escalation, {"outcome": "reject", "reason": "x"})
    assert again.status_code == 409 and conflicting.status_code == 409
    assert conflicting.json()["error"]["code"] == "conflict"
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED and escalation.decided_by_label == "rita"


def test_late_decision_gets_409(reviewer_client, escalate, monkeypatch):
    escalation = escalate()
    frozen = escalation.expires_at + timedelta(seconds=5)
    monkeypatch.setattr(timezone, "now", lambda: frozen)
    response = post_decision(reviewer_client, escalation, {"outcome": "approve"})
    assert response.status_code == 409
    assert "expired" in response.json()["error"]["message"]


def test_reject_without_reason_is_400_naming_reason(reviewer_client, escalate):
    escalation = escalate()
    response = post_decision(reviewer_client, escalation, {"outcome": "reject", "reason": ""})
    assert response.status_code == 400
    assert "/reason" in response.json()["error"]["fields"]


def test_bad_outcome_and_unknown_keys_are_400(reviewer_client, escalate):
    escalation = escalate()
    response = post_decision(reviewer_client, escalation, {"outcome": "maybe", "force": True})
    fields = response.json()["error"]["fields"]
    assert response.status_code == 400 and "/outcome" in fields and "/force" in fields


def test_edited_args_are_validated_with_pointers(reviewer_client, escalate):
    escalation = escalate(tool_schema=TOOL_SCHEMA)
    response = post_decision(
        reviewer_client,
        escalation,
        {"outcome": "approve", "args": {"service": "", "replicas": "two", "extra": 1}},
    )
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert "/args/service" in fields and "/args/replicas" in fields and "/args" in fields
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_agent_tokens_never_decide_not_even_their_own(sre, escalate):
    escalation = escalate()
    response = post_decision(Client(), escalation, {"outcome": "approve"}, **sre.headers())
    assert response.status_code == 403
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_auditor_and_outsider_cannot_decide(auditor_client, outsider_client, escalate):
    escalation = escalate()
    assert post_decision(auditor_client, escalation, {"outcome": "approve"}).status_code == 403
    assert post_decision(outsider_client, escalation, {"outcome": "approve"}).status_code == 403
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_reviewer_restricted_to_another_agent_gets_404(
    reviewer_client, rita, alice, other, escalate
):
    services.reviewer_scope_set(actor=alice, user=rita, agents=[other.agent])
    escalation = escalate()
    assert post_decision(reviewer_client, escalation, {"outcome": "approve"}).status_code == 404
