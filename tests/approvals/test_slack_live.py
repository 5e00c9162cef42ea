"""Slack's side over real HTTP: signed clicks to the console's live server, and the console's
answer delivered to the click's response_url (a local receiver standing in for
hooks.slack.com) by a real Celery worker after commit."""

from __future__ import annotations

import threading

import httpx
import pytest
from django.test import Client

from approvals import services
from approvals.models import EscalationStatus, EscalationVote
from tests.approvals.conftest import in_own_thread
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


@pytest.mark.parametrize("round_", range(3))
def test_inbox_and_slack_at_the_same_instant_one_answer_wins(
    settings,
    rita,
    alice,
    escalate,
    receiver_factory,  # noqa: F811
    worker,  # noqa: F811
    round_,
):
    """rita rejects in the inbox while alice approves from Slack: one decision, one vote, and
    Slack's click is answered on its response_url whichever side won."""
    settings.CONSOLE_SLACK_SIGNING_SECRET = SECRET
    receiver = receiver_factory()
    settings.CONSOLE_SLACK_RESPONSE_URL_PREFIX = receiver.url + "/"
    services.slack_identity_set(actor=None, user=alice, slack_user_id="U0ALICE001")
    escalation = escalate()
    body = click_body("U0ALICE001", "escalation_approve", str(escalation.pk))
    barrier = threading.Barrier(2)
    answers: dict[str, str] = {}

    def inbox() -> None:
        client = Client()
        client.force_login(rita)
        barrier.wait(timeout=10)
        page = client.post(
            f"/approvals/{escalation.pk}/decision/",
            {"outcome": "reject", "reason": "no"},
            follow=True,
        )
        answers["inbox"] = page.content.decode()

    def slack() -> None:
        barrier.wait(timeout=10)
        answer = Client().post(
            URL, body, content_type="application/x-www-form-urlencoded", **slack_headers(body)
        )
        answers["slack"] = answer.json()["text"]

    threads = [threading.Thread(target=in_own_thread(job)) for job in (inbox, slack)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    escalation.refresh_from_db()
    assert EscalationVote.objects.filter(escalation=escalation).count() == 1
    if escalation.status == EscalationStatus.APPROVED:
        assert "approved by alice" in answers["slack"]
        assert "already approved" in answers["inbox"]
    else:
        assert escalation.status == EscalationStatus.REJECTED
        assert answers["slack"] == "Nothing decided: already rejected by rita."
    [delivered] = receiver.wait_for(1)
    assert delivered["body"]["text"] == answers["slack"]
