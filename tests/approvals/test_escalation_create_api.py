"""POST /api/v1/escalations: validation against the SDK schema, idempotency, server-side settings.

The approval rule itself (which hooks apply, the strictest wins) is in
test_escalation_approval_rule.py.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from approvals.models import Escalation, EscalationStatus
from console import services as console_services
from console.governance.models import GovernanceEvent
from tests.approvals.conftest import (
    TOOL_SCHEMA,
    approval_hook,
    approval_request,
    ensure_approval_hook,
    post_escalation,
)


@pytest.fixture(autouse=True)
def _approval_hooks(request):
    """Both agents have an approval hook for restart_service|scale_deployment: the console
    refuses escalations no approval hook matches."""
    for name in ("sre", "other"):
        if name in request.fixturenames:
            ensure_approval_hook(request.getfixturevalue(name))


def test_create_returns_201_with_id_status_and_expiry(client, sre):
    response = post_escalation(client, sre, approval_request(), tool_name="restart_service")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "status", "expires_at"}
    assert body["status"] == "pending"
    escalation = Escalation.objects.get(pk=body["id"])
    assert escalation.agent == sre.agent
    assert escalation.tool_name == "restart_service"
    assert escalation.arguments == {"service": "api"}
    assert escalation.session_id.startswith("sess-")


def test_same_context_identity_returns_the_same_escalation_with_200(client, sre):
    request = approval_request()
    first = post_escalation(client, sre, request)
    again = post_escalation(client, sre, request)
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert Escalation.objects.count() == 1
    assert GovernanceEvent.objects.filter(action="escalation.created").count() == 1


def test_same_identity_from_another_agent_is_a_separate_escalation(client, sre, other):
    request = approval_request()
    assert post_escalation(client, sre, request).status_code == 201
    assert post_escalation(client, other, request).status_code == 201
    assert Escalation.objects.count() == 2


def test_request_failing_the_sdk_schema_is_refused_with_pointers(client, sre):
    request = approval_request()
    del request["verdict"]
    request["interception_point"] = "somewhere"
    response = post_escalation(client, sre, request)
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert "/request" in fields  # verdict is required
    assert "/request/interception_point" in fields
    assert not Escalation.objects.exists()


def test_a_permit_verdict_cannot_be_escalated(client, sre):
    request = approval_request()
    request["verdict"] = {"decision": "allow"}
    response = post_escalation(client, sre, request)
    assert response.status_code == 400
    assert "/request/verdict/decision" in response.json()["error"]["fields"]


def test_context_failing_the_agent_context_schema_is_refused(client, sre):
    request = approval_request()
    del request["context"]["tool_call"]
    response = post_escalation(client, sre, request)
    assert response.status_code == 400
    assert "/request/context" in response.json()["error"]["fields"]


def test_unknown_meta_keys_are_refused_naming_them(client, sre):
    response = post_escalation(client, sre, approval_request(), tool_result="x", secret=1)
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert "secret" in fields["/meta"][0] and "tool_result" in fields["/meta"][0]
    assert "/meta/secret" in fields and "/meta/tool_result" in fields


def test_unknown_top_level_keys_are_refused(client, sre):
    body = {"request": approval_request(), "meta": {}, "extra": True}
    response = client.post(
        "/api/v1/escalations", json.dumps(body), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 400
    assert "/extra" in response.json()["error"]["fields"]


def test_transcript_over_16kb_is_refused(client, sre):
    response = post_escalation(client, sre, approval_request(), transcript="x" * (16 * 1024 + 1))
    assert response.status_code == 400
    assert "/meta/transcript" in response.json()["error"]["fields"]


def test_tool_schema_must_be_a_valid_json_schema(client, sre):
    response = post_escalation(client, sre, approval_request(), tool_schema={"type": 12})
    assert response.status_code == 400
    assert "/meta/tool_schema" in response.json()["error"]["fields"]


def test_expiry_and_quorum_come_from_the_hook_not_from_the_agent(client, sre):
    hook = approval_hook(sre, expiresIn=120, approvalsRequired=2)
    request = approval_request(hook_key=hook.key)
    # The agent claims a day and one approval: ignored.
    request["verdict"]["approval"].update({"expires_in": 86400, "approvals_required": 1})
    before = timezone.now()
    response = post_escalation(client, sre, request, tool_schema=TOOL_SCHEMA)
    assert response.status_code == 201
    escalation = Escalation.objects.get(pk=response.json()["id"])
    assert escalation.hook == hook and escalation.hook_key == hook.key
    assert escalation.approvals_required == 2
    assert before + timedelta(seconds=119) <= escalation.expires_at
    assert escalation.expires_at <= timezone.now() + timedelta(seconds=120)


def test_expiry_and_quorum_of_the_matching_approval_hook_apply_without_a_named_hook(client, sre):
    response = post_escalation(client, sre, approval_request())
    escalation = Escalation.objects.get(pk=response.json()["id"])
    left = (escalation.expires_at - timezone.now()).total_seconds()
    assert 590 < left <= 600  # the hook's default expiresIn
    assert escalation.approvals_required == 1
    assert escalation.hook is not None and escalation.hook.definition["type"] == "approval"


def test_a_hook_of_another_agent_is_refused(client, sre, other):
    foreign = approval_hook(other)
    response = post_escalation(client, sre, approval_request(), hook=foreign.key)
    assert response.status_code == 400
    assert "/meta/hook" in response.json()["error"]["fields"]


def test_people_cannot_open_escalations(rita, sre):
    token = console_services.api_token_issue(actor=None, user=rita).plaintext
    response = Client().post(
        "/api/v1/escalations",
        json.dumps({"request": approval_request()}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 403
    assert not Escalation.objects.exists()


def test_anonymous_is_refused(client, sre):
    response = client.post(
        "/api/v1/escalations",
        json.dumps({"request": approval_request()}),
        content_type="application/json",
    )
    assert response.status_code in (401, 403)


def test_creation_writes_a_governance_event_without_the_arguments(client, sre):
    post_escalation(client, sre, approval_request(args={"service": "payments-db"}))
    event = GovernanceEvent.objects.get(action="escalation.created")
    assert event.agent == sre.agent
    assert event.actor_label == "agent:sre-agent"
    assert "payments-db" not in json.dumps([event.summary, event.before, event.after])
    assert event.after["status"] == EscalationStatus.PENDING
