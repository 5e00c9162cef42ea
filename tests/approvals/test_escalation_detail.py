"""/approvals/<id>/: one escalation with what a reviewer needs to decide it well."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals import services
from approvals.models import Escalation, EscalationStatus
from console_client.client import transcript_tail
from console_client.transcript import SessionTranscript
from tests.approvals.conftest import TOOL_SCHEMA, approval_hook


def _transcript(tmp_path: Path) -> str:
    """What console_client sends: the tail of its JSON Lines transcript, first line cut."""
    transcript = SessionTranscript.create("sess-detail", tmp_path)
    transcript.append("user", "x" * 5000)  # pushed out of the 4 KB tail
    transcript.append("user", "Please scale web to 8 replicas before the sale.")
    call = {"tool_call": "scale_deployment", "args": {"service": "web", "replicas": 8}}
    transcript.append("assistant", json.dumps(call), tool_name="scale_deployment", call_id="c1")
    transcript.append("tool", "scaled web to 4", tool_name="get_status", call_id="c0")
    transcript.append("user", "Policy: ask before scaling.", additional_context_for="c1")
    return transcript_tail(transcript.path)


@pytest.fixture
def edited(rita, escalate, tmp_path):
    """An approved escalation whose reviewer edited the arguments."""
    escalation = escalate(
        "scale_deployment",
        {"service": "web", "replicas": 8, "zone": "eu"},
        tool_schema={**TOOL_SCHEMA, "additionalProperties": True},
        transcript=_transcript(tmp_path),
        session_id="sess-detail",
        turn=4,
    )
    services.escalation_decide(
        escalation=escalation,
        actor=rita,
        outcome="approve",
        reason="3 is enough",
        args={"service": "web", "replicas": 3, "note": "capped"},
    )
    escalation.refresh_from_db()
    return escalation


def test_the_page_shows_the_edit_as_a_before_and_after_diff(reviewer_client, edited):
    html = reviewer_client.get(f"/approvals/{edited.pk}/").content.decode()
    diff = html.split('<table class="diff">')[1].split("</table>")[0]
    rows = re.findall(r'<tr class="change-(\w+)"><td><code>([^<]+)</code>', diff)
    assert rows == [("added", "/note"), ("changed", "/replicas"), ("removed", "/zone")]
    assert "<code>8</code>" in diff and "<code>3</code>" in diff
    assert "<code>&quot;capped&quot;</code>" in diff
    assert "Approved by rita with edited arguments" in html
    assert "“3 is enough”" in html


def test_the_transcript_reads_as_a_conversation_not_json_lines(reviewer_client, edited):
    html = reviewer_client.get(f"/approvals/{edited.pk}/").content.decode()
    conversation = html.split('<ol class="conversation">')[1].split("</ol>")[0]
    assert "Earlier messages were not sent" in html  # the cut first line is left out
    assert "xxxxx" not in conversation
    assert "Please scale web to 8 replicas before the sale." in conversation
    assert "assistant calls <code>scale_deployment</code>" in conversation
    assert "&quot;replicas&quot;: 8" in conversation
    assert "<code>get_status</code> returned" in conversation
    assert "context added by a hook" in conversation
    assert '{"ts":' not in html and "&quot;role&quot;" not in html


def test_a_transcript_that_is_not_json_lines_is_shown_as_stored_and_said_so(
    reviewer_client, escalate
):
    escalation = escalate(transcript="user: please restart payments")
    html = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert "not in the client's JSON Lines form" in html
    assert "user: please restart payments" in html


def test_without_a_transcript_the_page_says_so_and_shows_the_request_context(
    reviewer_client, escalate
):
    escalation = escalate("restart_service", {"service": "payments"})
    html = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert "No transcript came with this escalation" in html
    assert "Request context, as the agent sent it" in html
    assert "&quot;interception_point&quot;: &quot;pre_tool_call&quot;" in html


def test_the_page_names_the_hook_the_rule_and_why_it_fired(reviewer_client, sre, escalate):
    hook = approval_hook(sre, approvalsRequired=2, expiresIn=900)
    escalation = escalate()
    html = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    why = html.split('id="h-why"')[1].split("</section>")[0]
    assert escalation.hook_key == hook.key
    # Named by its current name; the key stays visible beside it.
    assert f"<strong>{hook.name}</strong>" in why and hook.key in why
    assert "approval hook, PreToolUse, agent level" in why
    assert "restart_service|scale_deployment" in why
    assert "2 approvals, 900 s to decide" in why
    assert "approval_required" in why and "restart_service needs approval" in why
    assert "Rule applied: <strong>2 approvals</strong>" in why
    assert "0/2 approvals" in html


def test_the_page_lists_the_agents_last_ten_decisions_on_the_same_tool(
    reviewer_client, rita, alice, escalate
):
    earlier = [escalate("restart_service", {"service": f"s{n}"}) for n in range(11)]
    for index, escalation in enumerate(earlier):
        actor = rita if index % 2 else alice
        services.escalation_decide(
            escalation=escalation, actor=actor, outcome="reject", reason=f"no {index}"
        )
    escalate("scale_deployment")  # another tool: not listed
    current = escalate("restart_service", {"service": "now"})
    html = reviewer_client.get(f"/approvals/{current.pk}/").content.decode()
    recent = html.split('id="h-recent"')[1].split("</section>")[0]
    linked = re.findall(r'href="/approvals/([0-9a-f-]+)/"', recent)
    assert linked == [str(e.pk) for e in reversed(earlier[1:])]  # newest first, ten
    assert recent.count("Rejected") == 10
    assert "no 10" in recent and "no 0" not in recent
    assert "alice" in recent and "rita" in recent


def test_an_expired_row_shows_expired_before_the_sweep(reviewer_client, escalate):
    escalation = escalate()
    Escalation.objects.filter(pk=escalation.pk).update(expires_at=escalation.created_at)
    html = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert "Expired with no decision" in html
    assert 'class="approve-form"' not in html


def test_a_pending_escalation_can_be_decided_from_its_page(reviewer_client, escalate):
    escalation = escalate()
    html = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert 'data-hold="approve"' in html and 'name="return_to" value="detail"' in html
    response = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "approve", "return_to": "detail"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/approvals/{escalation.pk}/"
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    again = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert "restart_service: approved." in again and "Approved by rita" in again


def test_the_session_timeline_link_is_for_those_who_may_open_it(
    reviewer_client, admin_client, escalate
):
    escalation = escalate(session_id="sess-77")
    admin = admin_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert 'href="/audit/sessions/sess-77/?agent=sre-agent"' in admin
    reviewer = reviewer_client.get(f"/approvals/{escalation.pk}/").content.decode()
    assert "/audit/sessions/" not in reviewer
    assert "The session timeline is on the audit pages" in reviewer


def test_only_reviewers_in_scope_and_admins_open_the_page(
    reviewer_client,
    admin_client,
    auditor_client,
    outsider_client,
    client,
    rita,
    alice,
    other,
    escalate,
):
    escalation = escalate()
    url = f"/approvals/{escalation.pk}/"
    assert reviewer_client.get(url).status_code == 200
    assert admin_client.get(url).status_code == 200
    assert auditor_client.get(url).status_code == 403
    assert outsider_client.get(url).status_code == 403
    assert client.get(url).status_code == 302
    services.reviewer_scope_set(actor=alice, user=rita, agents=[other.agent])
    assert reviewer_client.get(url).status_code == 404
    assert (
        reviewer_client.get("/approvals/00000000-0000-0000-0000-000000000000/").status_code == 404
    )
    assert "no-store" in admin_client.get(url)["Cache-Control"]


def test_the_page_query_count_does_not_grow_with_votes_and_history(
    admin_client, rita, alice, sre, escalate
):
    from approvals.models import ReviewerScope  # noqa: F401  (the scope subquery runs)
    from tests.approvals.conftest import make_reviewer

    approval_hook(sre, approvalsRequired=3)
    target = escalate()
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(f"/approvals/{target.pk}/").status_code == 200
    services.escalation_decide(escalation=target, actor=rita, outcome="approve")
    services.escalation_decide(escalation=target, actor=make_reviewer("rob"), outcome="approve")
    for n in range(6):
        older = escalate("restart_service", {"service": f"s{n}"})
        services.escalation_decide(escalation=older, actor=alice, outcome="reject", reason="no")
    with CaptureQueriesContext(connection) as many:
        html = admin_client.get(f"/approvals/{target.pk}/").content.decode()
    assert "rob" in html and html.count("Rejected") >= 6
    assert len(many) == len(few)
