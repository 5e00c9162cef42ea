"""What the per-agent webhook sends about a new escalation: a Block Kit message with
Approve/Reject buttons for Slack, a signed decision link in the generic JSON; metadata only."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from approvals.links import decision_link_token, escalation_id_from_token
from approvals.notifications import webhook_body
from approvals.slack import APPROVE, OPEN, REJECT


@pytest.fixture
def slack_agent(sre):
    sre.agent.webhook_url = "https://hooks.slack.com/services/T0/B0/x"
    sre.agent.webhook_format = "slack"
    sre.agent.save(update_fields=["webhook_url", "webhook_format"])
    return sre


def _elements(body: dict) -> list[dict]:
    [actions] = [block for block in body["blocks"] if block["type"] == "actions"]
    return actions["elements"]


def test_new_escalation_message_has_approve_and_reject_buttons(slack_agent, escalate, settings):
    settings.CONSOLE_SLACK_SIGNING_SECRET = "secret"
    escalation = escalate("restart_service", {"service": "payments-secret"})
    body = webhook_body(escalation, "escalation.created")
    approve, reject, review = _elements(body)
    assert (approve["action_id"], reject["action_id"], review["action_id"]) == (
        APPROVE,
        REJECT,
        OPEN,
    )
    assert approve["value"] == reject["value"] == str(escalation.pk)
    assert approve["style"] == "primary" and reject["style"] == "danger"
    assert approve["confirm"]["confirm"]["text"] == "Approve"  # a second click confirms
    assert "Rejected from Slack by" in reject["confirm"]["text"]["text"]
    assert review["url"].startswith("http://127.0.0.1:8000/approvals/link/")
    assert "Approval needed: restart_service on sre-agent" in body["text"]
    assert "payments-secret" not in json.dumps(body)  # metadata only, never arguments


def test_without_a_signing_secret_the_message_only_links_to_the_console(
    slack_agent, escalate, settings
):
    settings.CONSOLE_SLACK_SIGNING_SECRET = ""
    body = webhook_body(escalate(), "escalation.created")
    assert [element["action_id"] for element in _elements(body)] == [OPEN]


def test_text_from_the_agent_cannot_mention_or_link_in_slack(slack_agent, escalate, settings):
    settings.CONSOLE_SLACK_SIGNING_SECRET = "secret"
    escalation = escalate()
    escalation.tool_name = "<!channel> <https://evil.example|click> & co"
    escalation.custom_agent_name = "<@U0BOSS>"
    body = webhook_body(escalation, "escalation.created")
    section = body["blocks"][0]["text"]["text"]
    assert "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; co" in section
    assert "&lt;@U0BOSS&gt;" in section
    assert "<!channel>" not in section and "<@U0BOSS>" not in section
    assert section.count("<") == 1  # only the console's own <!date^…> formatting


def test_generic_json_carries_a_signed_decision_link_for_the_escalation(sre, escalate):
    escalation = escalate()
    body = webhook_body(escalation, "escalation.created")
    token = body["decide_url"].removeprefix("http://127.0.0.1:8000/approvals/link/").strip("/")
    assert escalation_id_from_token(token) == escalation.pk
    # A retried or later message about the same escalation carries the same link.
    assert webhook_body(escalation, "escalation.approved")["decide_url"] == body["decide_url"]


def test_altered_or_foreign_or_too_old_link_names_no_escalation(sre, escalate):
    from django.core import signing

    escalation = escalate()
    token = decision_link_token(escalation)
    other = escalate("scale_deployment")
    forged = token.replace(
        signing.b64_encode(json.dumps(str(escalation.pk)).encode()).decode(),
        signing.b64_encode(json.dumps(str(other.pk)).encode()).decode(),
    )
    assert forged != token and escalation_id_from_token(forged) is None
    assert escalation_id_from_token(signing.dumps(str(escalation.pk))) is None  # other salt
    escalation.created_at -= timedelta(days=40)
    assert escalation_id_from_token(decision_link_token(escalation)) is None
