"""Approval hooks for another runtime: the hook request waits inside the console for the
reviewers' decision, then answers Claude Code with allow (and the complete edited input) or
deny with the reviewer's reason."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from approvals import services
from approvals.models import Escalation
from audit.models import InterceptionRecord
from tests.approvals.conftest import in_own_thread
from tests.runtimes.runtime_support import CLAUDE_PRE, CWD, SESSION, add_hook

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_db_after")]


async def _pending_escalation() -> Escalation:
    for _ in range(200):
        found = await sync_to_async(Escalation.objects.filter(status="pending").first)()
        if found is not None:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("no escalation was opened")


def _post(sre, body):
    return AsyncClient().post(
        "/api/v1/hooks/claude-code",
        data=json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {sre.token}"},
    )


async def _decide(escalation, rita, **decision):
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide), escalation=escalation, actor=rita, **decision
    )


async def test_an_edited_approval_allows_with_the_complete_edited_input(sre, rita):
    await sync_to_async(add_hook)(sre, "PreToolUse", {"type": "approval", "matcher": "Bash"})
    waiting = asyncio.create_task(_post(sre, CLAUDE_PRE))
    escalation = await _pending_escalation()
    assert escalation.framework == "claude-code"
    assert escalation.session_id == SESSION and escalation.cwd == CWD
    assert not waiting.done()
    edited = {"command": "npm test -- --bail", "description": "Run the tests, stop early"}
    await _decide(escalation, rita, outcome="approve", reason="ok", args=edited)
    response = await asyncio.wait_for(waiting, timeout=20)
    specific = response.json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"
    assert specific["updatedInput"] == edited
    record = await sync_to_async(InterceptionRecord.objects.get)(agent=sre.agent)
    assert record.outcome == "approved"
    assert "bail" not in json.dumps(record.raw)


async def test_a_plain_approval_allows_without_an_updated_input(sre, rita):
    await sync_to_async(add_hook)(sre, "PreToolUse", {"type": "approval", "matcher": "Bash"})
    waiting = asyncio.create_task(_post(sre, CLAUDE_PRE))
    await _decide(await _pending_escalation(), rita, outcome="approve")
    specific = (await asyncio.wait_for(waiting, timeout=20)).json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"
    assert "updatedInput" not in specific


async def test_a_rejection_denies_with_the_reviewers_full_reason(sre, rita):
    await sync_to_async(add_hook)(sre, "PreToolUse", {"type": "approval", "matcher": "Bash"})
    waiting = asyncio.create_task(_post(sre, CLAUDE_PRE))
    reason = "Not during the release freeze. " + "Ask the release manager first. " * 20
    await _decide(await _pending_escalation(), rita, outcome="reject", reason=reason)
    specific = (await asyncio.wait_for(waiting, timeout=20)).json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"] == reason.strip()
    record = await sync_to_async(InterceptionRecord.objects.get)(agent=sre.agent)
    assert record.outcome == "rejected"


async def test_a_hook_that_asks_escalates_too(sre, rita):
    ask = {
        "type": "command",
        "matcher": "Bash",
        "command": 'echo \'{"decision": "ask", "reason": "touches prod"}\'',
    }
    await sync_to_async(add_hook)(sre, "PreToolUse", ask)
    waiting = asyncio.create_task(_post(sre, CLAUDE_PRE))
    escalation = await _pending_escalation()
    assert escalation.verdict_message == "touches prod"
    await _decide(escalation, rita, outcome="approve")
    specific = (await asyncio.wait_for(waiting, timeout=20)).json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"


async def test_a_runtime_that_hangs_up_while_waiting_leaves_a_fail_closed_record(sre):
    await sync_to_async(add_hook)(sre, "PreToolUse", {"type": "approval", "matcher": "Bash"})
    waiting = asyncio.create_task(_post(sre, CLAUDE_PRE))
    await _pending_escalation()
    waiting.cancel()  # what the server does when Claude Code's hook timeout closes the socket
    with pytest.raises(asyncio.CancelledError):
        await waiting
    record = await sync_to_async(InterceptionRecord.objects.get)(agent=sre.agent)
    assert record.outcome == "host_error" and record.decision == "deny"
    assert record.framework == "claude-code"


async def test_a_token_revoked_while_its_call_waited_gets_no_approval(sre, rita):
    from agents import services as agent_services

    await sync_to_async(add_hook)(sre, "PreToolUse", {"type": "approval", "matcher": "Bash"})
    waiting = asyncio.create_task(_post(sre, CLAUDE_PRE))
    escalation = await _pending_escalation()
    token = await sync_to_async(sre.agent.tokens.get)()
    await asyncio.to_thread(
        in_own_thread(agent_services.agent_token_revoke), actor=None, token=token
    )
    await _decide(escalation, rita, outcome="approve")
    specific = (await asyncio.wait_for(waiting, timeout=20)).json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "revoked" in specific["permissionDecisionReason"]
