"""Escalation bodies (create and decision) carrying numbers that cannot be used, a
5,000-digit integer or infinity in the tool arguments, are a 400 naming the field; before,
infinity reached PostgreSQL's json and answered 500."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from approvals.models import Escalation, EscalationStatus
from tests.approvals.conftest import approval_request

pytestmark = pytest.mark.django_db

ARGS_POINTER = "/request/context/target/replicas"  # the first of its two places


def _body_with(number: str) -> str:
    request = approval_request("scale_deployment", {"service": "web", "replicas": 12345})
    return json.dumps({"request": request, "meta": {}}).replace("12345", number)


@pytest.mark.parametrize(
    ("number", "problem"),
    [("9" * 5000, "5000 digits"), ("1e999", "finite"), ("-1e999", "finite"), ("NaN", "finite")],
)
def test_escalation_with_an_unusable_number_is_a_400_naming_it(sre, number, problem):
    response = Client().post(
        "/api/v1/escalations", _body_with(number), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 400, response.content[:300]
    fields = response.json()["error"]["fields"]
    assert problem in " ".join(fields[ARGS_POINTER])
    assert not Escalation.objects.exists()


@pytest.mark.parametrize("number", ["9" * 5000, "1e999"])
def test_decision_args_with_an_unusable_number_are_a_400(reviewer_client, escalate, number):
    escalation = escalate("scale_deployment", {"service": "web", "replicas": 2})
    body = '{"outcome": "approve", "args": {"service": "web", "replicas": ' + number + "}}"
    response = reviewer_client.post(
        f"/api/v1/escalations/{escalation.pk}/decision", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    assert "/args/replicas" in response.json()["error"]["fields"]
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


@pytest.mark.parametrize("limit", ["9" * 5000, "²", "0", "-1", "abc"])
def test_a_list_limit_that_is_not_a_small_ascii_integer_is_a_400(reviewer_client, limit):
    response = reviewer_client.get("/api/v1/escalations", {"limit": limit})
    assert response.status_code == 400, response.content[:300]
    assert "/limit" in response.json()["error"]["fields"]


@pytest.mark.parametrize(("number", "problem"), [("9" * 5000, "5000 digits"), ("1e999", "finite")])
def test_inbox_edited_args_with_an_unusable_number_are_a_form_error(
    reviewer_client, escalate, number, problem
):
    escalation = escalate("scale_deployment", {"service": "web", "replicas": 2})
    text = '{"service": "web", "replicas": ' + number + "}"
    response = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "approve", "args": text}, follow=True
    )
    assert response.status_code == 200, response.status_code
    assert problem in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING
