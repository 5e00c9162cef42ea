"""Slack's side over real HTTP: signed clicks to the console's live server, and the console's
answer delivered to the click's response_url (a local receiver standing in for
hooks.slack.com) by a real Celery worker after commit."""

from __future__ import annotations

import httpx
import pytest

from approvals import services
from approvals.models import EscalationStatus
from tests.approvals.test_notifications import (  # noqa: F401 (fixtures)
    _receivers_listen_on_loopback,
    receiver_factory,
    worker,
)
from tests.approvals.test_slack_interactions import RITA, SECRET, URL, click_body, slack_headers

pytestmark = pytest.mark.django_db(transaction=True)


def _wire(headers: dict[str, str]) -> dict[str, str]:
    return {
        "X-Slack-Request-Timestamp": headers["HTTP_X_SLACK_REQUEST_TIMESTAMP"],
        "X-Slack-Signature": headers["HTTP_X_SLACK_SIGNATURE"],
        "Content-Type": "application/x-www-form-urlencoded",
    }


def test_signed_click_over_http_decides_and_answers_on_the_response_url(
    live_server,
    settings,
    rita,
    escalate,
    receiver_factory,  # noqa: F811 (the fixture imported above)
    worker,  # noqa: F811
):
    settings.CONSOLE_SLACK_SIGNING_SECRET = SECRET
    receiver = receiver_factory()
    settings.CONSOLE_SLACK_RESPONSE_URL_PREFIX = receiver.url
    services.slack_identity_set(actor=None, user=rita, slack_user_id=RITA)
    escalation = escalate()
    body = click_body(RITA, "escalation_approve", str(escalation.pk), response_url=receiver.url)

    wrong = httpx.post(
        live_server.url + URL, content=body, headers=_wire(slack_headers(body, secret="nope"))
    )
    assert wrong.status_code == 401
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING

    signed = httpx.post(live_server.url + URL, content=body, headers=_wire(slack_headers(body)))
    assert signed.status_code == 200, signed.text
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED and escalation.decided_by == rita
    [delivered] = receiver.wait_for(1)
    assert delivered["body"] == signed.json()
    assert delivered["body"]["replace_original"] is True
    assert "approved by rita" in delivered["body"]["text"]
