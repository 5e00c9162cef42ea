"""`POST /api/v1/integrations/slack/interactions`: Approve/Reject clicks from Slack, signed as
Slack signs them (each request's signature is computed here, with the secret, independently
of the console's code), decided through the same service and rules as the inbox."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client

from approvals import services
from approvals.models import EscalationStatus, EscalationVote
from approvals.notifications import slack_response_url_allowed
from approvals.slack import verify_request
from console.errors import NotAuthenticated
from console.governance.models import GovernanceEvent
from tests.approvals.test_notifications import (  # noqa: F401 (fixtures)
    _receivers_listen_on_loopback,
    receiver_factory,
)

URL = "/api/v1/integrations/slack/interactions"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5-test"
RITA, ALICE, AUDREY = "U0RITA0001", "U0ALICE001", "U0AUDREY01"
RESPONSE_PATH = "actions/T0001/1234/abcd"


@pytest.fixture(autouse=True)
def _signing_secret(settings: Any) -> None:
    settings.CONSOLE_SLACK_SIGNING_SECRET = SECRET


@pytest.fixture(autouse=True)
def _answers_stay_on_loopback(settings: Any, receiver_factory) -> None:  # noqa: F811
    """The console answers each click on its response_url; here "Slack's host" is a local
    receiver, so no test ever reaches for hooks.slack.com (the embedded default sends from a
    thread of this process)."""
    settings.CONSOLE_SLACK_RESPONSE_URL_PREFIX = receiver_factory().url + "/"


@pytest.fixture
def linked(rita, alice, audrey) -> None:
    """rita (reviewer), alice (admin) and audrey (auditor) each linked to a Slack member."""
    for user, member in ((rita, RITA), (alice, ALICE), (audrey, AUDREY)):
        services.slack_identity_set(actor=None, user=user, slack_user_id=member)


def click_body(
    member: str, action: str, escalation_id: str, *, response_url: str | None = None
) -> bytes:
    """A block_actions payload as Slack sends it for a button press, form-encoded; by default
    its response_url is under the configured prefix (Slack's host)."""
    if response_url is None:
        response_url = settings.CONSOLE_SLACK_RESPONSE_URL_PREFIX + RESPONSE_PATH
    payload = {
        "type": "block_actions",
        "user": {"id": member, "username": "someone", "team_id": "T0001"},
        "team": {"id": "T0001", "domain": "example"},
        "api_app_id": "A0001",
        "container": {"type": "message", "message_ts": "1700000000.000100"},
        "channel": {"id": "C0001", "name": "approvals"},
        "response_url": response_url,
        "trigger_id": "1.2.3",
        "actions": [
            {
                "type": "button",
                "action_id": action,
                "block_id": f"escalation:{escalation_id}",
                "value": escalation_id,
                "action_ts": "1700000001.000200",
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def slack_headers(body: bytes, *, secret: str = SECRET, timestamp: int | None = None) -> dict:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    return {
        "HTTP_X_SLACK_REQUEST_TIMESTAMP": stamp,
        "HTTP_X_SLACK_SIGNATURE": "v0=" + digest.hexdigest(),
    }


def post(body: bytes, headers: dict) -> Any:
    return Client().post(
        URL, data=body, content_type="application/x-www-form-urlencoded", **headers
    )


def click(member: str, action: str, escalation: Any) -> Any:
    body = click_body(member, action, str(escalation.pk))
    return post(body, slack_headers(body))


def decisions(escalation: Any) -> tuple[str, int]:
    escalation.refresh_from_db()
    return escalation.status, EscalationVote.objects.filter(escalation=escalation).count()


def test_slacks_documented_example_signature_verifies() -> None:
    """The example in Slack's "Verifying requests from Slack" guide, byte for byte."""
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow"
        b"&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner"
        b"&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
        b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
        b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    sent = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    verify_request(
        secret="8f742231b10e8888abcd99yyyzzz85a5",
        timestamp="1531420618",
        sent=sent,
        body=body,
        now=1531420618 + 60,
    )
    with pytest.raises(NotAuthenticated):
        verify_request(
            secret="8f742231b10e8888abcd99yyyzzz85a5",
            timestamp="1531420618",
            sent=sent,
            body=body + b"&x=1",
            now=1531420618 + 60,
        )


def test_correctly_signed_approve_decides_as_the_linked_reviewer(linked, rita, escalate):
    escalation = escalate()
    answer = click(RITA, "escalation_approve", escalation)
    assert answer.status_code == 200, answer.content
    assert decisions(escalation) == (EscalationStatus.APPROVED, 1)
    assert escalation.decided_by == rita and escalation.decided_by_label == "rita"
    event = GovernanceEvent.objects.get(action="escalation.approved")
    assert event.actor == rita and event.object_id == str(escalation.pk)
    message = answer.json()
    assert message["replace_original"] is True
    assert "approved by rita" in message["text"]
    assert "actions" not in json.dumps(message["blocks"])  # the buttons are gone


def test_reject_from_slack_records_who_rejected_as_the_reason(linked, rita, escalate):
    escalation = escalate()
    answer = click(RITA, "escalation_reject", escalation)
    assert answer.status_code == 200
    assert decisions(escalation) == (EscalationStatus.REJECTED, 1)
    assert escalation.decision_reason == "Rejected from Slack by rita"
    assert "rejected by rita" in answer.json()["text"]


@pytest.mark.parametrize(
    "tamper",
    ["other secret", "body changed after signing", "signature of another timestamp", "v1"],
)
def test_wrongly_signed_request_is_401_and_decides_nothing(linked, escalate, tamper):
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk))
    headers = slack_headers(body)
    if tamper == "other secret":
        headers = slack_headers(body, secret="not-the-secret")
    elif tamper == "body changed after signing":
        body = click_body(RITA, "escalation_reject", str(escalation.pk))
    elif tamper == "signature of another timestamp":
        headers["HTTP_X_SLACK_REQUEST_TIMESTAMP"] = str(int(time.time()) - 1)
    else:
        headers["HTTP_X_SLACK_SIGNATURE"] = headers["HTTP_X_SLACK_SIGNATURE"].replace("v0=", "v1=")
    answer = post(body, headers)
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "not_authenticated"
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


@pytest.mark.parametrize("drop", ["HTTP_X_SLACK_SIGNATURE", "HTTP_X_SLACK_REQUEST_TIMESTAMP"])
def test_unsigned_request_is_401(linked, escalate, drop):
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk))
    headers = slack_headers(body)
    del headers[drop]
    assert post(body, headers).status_code == 401
    assert post(body, {}).status_code == 401
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


@pytest.mark.parametrize("skew", [-301, -3600, 301])
def test_stale_or_future_timestamp_is_401_though_correctly_signed(linked, escalate, skew):
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk))
    answer = post(body, slack_headers(body, timestamp=int(time.time()) + skew))
    assert answer.status_code == 401
    assert "stale" in answer.json()["error"]["message"]
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_a_timestamp_within_five_minutes_is_accepted(linked, escalate):
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk))
    answer = post(body, slack_headers(body, timestamp=int(time.time()) - 280))
    assert answer.status_code == 200
    assert decisions(escalation) == (EscalationStatus.APPROVED, 1)


def test_without_a_signing_secret_every_request_is_refused(linked, escalate, settings):
    settings.CONSOLE_SLACK_SIGNING_SECRET = ""
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk))
    answer = post(body, slack_headers(body, secret=""))
    assert answer.status_code == 401
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_replay_after_the_decision_answers_already_decided(linked, escalate):
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk))
    headers = slack_headers(body)
    assert post(body, headers).status_code == 200
    replay = post(body, headers)  # the very same signed request, within the five minutes
    assert replay.status_code == 200  # Slack is answered; the message says why nothing happened
    assert replay.json() == {
        "response_type": "ephemeral",
        "replace_original": False,
        "text": "Nothing decided: already approved by rita.",
    }
    assert decisions(escalation) == (EscalationStatus.APPROVED, 1)


def test_unlinked_slack_member_is_refused_and_nothing_decided(linked, escalate):
    escalation = escalate()
    answer = click("U0STRANGER", "escalation_approve", escalation)
    assert answer.status_code == 200
    message = answer.json()
    assert message["response_type"] == "ephemeral"
    assert "not linked to a console reviewer" in message["text"] and "U0STRANGER" in message["text"]
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_linked_member_without_the_reviewer_role_is_refused(linked, escalate):
    escalation = escalate()
    answer = click(AUDREY, "escalation_approve", escalation)
    assert answer.json()["text"] == "Nothing decided: audrey may not decide this escalation."
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_deactivated_reviewer_is_refused(linked, rita, escalate):
    rita.is_active = False
    rita.save(update_fields=["is_active"])
    escalation = escalate()
    assert "not linked" in click(RITA, "escalation_approve", escalation).json()["text"]
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_reviewer_outside_their_scope_is_refused(linked, rita, other, escalate):
    services.reviewer_scope_set(actor=None, user=rita, agents=[other.agent])
    escalation = escalate()  # of sre-agent
    answer = click(RITA, "escalation_reject", escalation)
    assert answer.json()["text"] == "Nothing decided: rita may not decide this escalation."
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)
    in_scope = escalate(agent=other)
    assert click(RITA, "escalation_approve", in_scope).status_code == 200
    assert decisions(in_scope) == (EscalationStatus.APPROVED, 1)


def test_inbox_first_then_slack_the_inbox_decision_stands(linked, admin_client, escalate):
    escalation = escalate()
    admin_client.post(f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"})
    answer = click(RITA, "escalation_reject", escalation)
    assert answer.json()["text"] == "Nothing decided: already approved by alice."
    assert decisions(escalation) == (EscalationStatus.APPROVED, 1)


def test_slack_first_then_inbox_and_api_are_refused(linked, admin_client, escalate):
    escalation = escalate()
    assert click(RITA, "escalation_approve", escalation).status_code == 200
    page = admin_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "reject", "reason": "no"}, follow=True
    )
    assert "already approved" in page.content.decode()
    api = admin_client.post(
        f"/api/v1/escalations/{escalation.pk}/decision",
        json.dumps({"outcome": "reject", "reason": "no"}),
        content_type="application/json",
    )
    assert api.status_code == 409
    assert decisions(escalation) == (EscalationStatus.APPROVED, 1)
    assert escalation.decided_by_label == "rita"


def test_expired_escalation_is_not_decided_from_slack(linked, escalate):
    escalation = escalate()
    escalation.expires_at = escalation.created_at
    escalation.save(update_fields=["expires_at"])
    answer = click(RITA, "escalation_approve", escalation)
    assert answer.json()["text"] == "Nothing decided: already expired."
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_an_approval_of_several_counts_once_per_reviewer(linked, sre, escalate):
    from tests.approvals.conftest import approval_hook

    approval_hook(sre, approvalsRequired=2)
    escalation = escalate()
    first = click(RITA, "escalation_approve", escalation)
    assert first.json()["text"] == "Your approval counted (1/2)."
    again = click(RITA, "escalation_approve", escalation)
    assert again.json()["text"] == "Nothing decided: You already voted on this escalation."
    assert decisions(escalation) == (EscalationStatus.PENDING, 1)
    last = click(ALICE, "escalation_approve", escalation)
    assert "approved by alice" in last.json()["text"]
    assert decisions(escalation) == (EscalationStatus.APPROVED, 2)


def test_review_in_console_button_is_acknowledged_and_decides_nothing(linked, escalate):
    escalation = escalate()
    answer = click(RITA, "escalation_open", escalation)
    assert answer.status_code == 200 and answer.content == b""
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"payload=not-json",
        urlencode({"payload": json.dumps({"type": "view_submission"})}).encode(),
        urlencode({"payload": json.dumps({"type": "block_actions", "actions": []})}).encode(),
    ],
)
def test_signed_request_that_is_no_button_click_is_400(linked, escalate, body):
    escalation = escalate()
    answer = post(body, slack_headers(body))
    assert answer.status_code == 400
    assert set(answer.json()["error"]["fields"]) == {"/payload"}
    assert decisions(escalation) == (EscalationStatus.PENDING, 0)


def test_button_value_that_is_no_escalation_id_is_400(linked):
    body = click_body(RITA, "escalation_approve", "../../etc")
    assert post(body, slack_headers(body)).status_code == 400


def test_only_post_is_served(linked):
    assert Client().get(URL).status_code == 405


def test_answers_go_only_to_slacks_own_host(settings: Any) -> None:
    settings.CONSOLE_SLACK_RESPONSE_URL_PREFIX = "https://hooks.slack.com/"  # the default
    assert slack_response_url_allowed("https://hooks.slack.com/actions/T0/1/x")
    for url in ("", "http://hooks.slack.com/a", "https://hooks.slack.com.evil.example/a"):
        assert not slack_response_url_allowed(url), url
