"""POST /api/v1/hooks/claude-code: Claude Code's own hook input in, its own output out, the
agent's hooks evaluated on the console, records stored payload-free."""

from __future__ import annotations

import pytest
from django.test import Client

from agents import services as agent_services
from agents.models import RuntimeSession
from approvals.models import Escalation
from audit.models import InterceptionRecord
from tests.runtimes.runtime_support import (
    AUDIT_CONTEXT,
    BLOCK_RM_RF,
    CLAUDE_POST,
    CLAUDE_PRE,
    CLAUDE_SESSION_START,
    CLAUDE_STOP,
    CWD,
    SESSION,
    STOP_TASK_COMPLETE,
    add_hook,
    payload,
    post_hook,
)

RM = {"command": "rm -rf /home/dev/project/build", "description": "Clean the build"}


def test_a_call_no_hook_matches_gets_no_objection_and_a_payload_free_record(client, sre):
    response = post_hook(client, sre, "claude-code", CLAUDE_PRE)
    assert response.status_code == 200, response.content
    assert response.json() == {}
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert record.session_id == SESSION
    assert record.framework == "claude-code"
    assert record.tool_name == "Bash"
    assert record.interception_point == "pre_tool_call"
    assert record.outcome == "allowed"
    assert "npm test" not in str(record.raw)


def test_a_blocking_command_hook_denies_with_the_reason_for_the_model(client, sre):
    add_hook(sre, "PreToolUse", BLOCK_RM_RF)
    response = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    specific = response.json()["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    assert "rm -rf is not allowed here" in specific["permissionDecisionReason"]
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert record.outcome == "denied"
    assert "rm -rf" not in str(record.raw)


def test_tool_names_are_matched_as_claude_code_names_them(client, sre):
    add_hook(
        sre, "PreToolUse", {"type": "command", "matcher": "mcp__memory__.*", "command": "exit 2"}
    )
    bash = post_hook(client, sre, "claude-code", CLAUDE_PRE)
    mcp = post_hook(
        client,
        sre,
        "claude-code",
        payload(CLAUDE_PRE, tool_name="mcp__memory__create_entities", tool_input={"entities": []}),
    )
    assert bash.json() == {}
    assert mcp.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_post_tool_use_additional_context_reaches_the_model(client, sre):
    add_hook(sre, "PostToolUse", AUDIT_CONTEXT)
    body = post_hook(client, sre, "claude-code", CLAUDE_POST).json()
    assert body == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": "[AUDIT] Tool 'Bash' was executed.",
        }
    }


def test_post_tool_use_block_is_a_top_level_decision_with_the_reason(client, sre):
    add_hook(
        sre,
        "PostToolUse",
        {"type": "command", "matcher": "Bash", "command": "echo 'secrets in output' >&2; exit 2"},
    )
    body = post_hook(client, sre, "claude-code", CLAUDE_POST).json()
    assert body == {"decision": "block", "reason": "secrets in output"}


def test_stop_rejection_blocks_with_the_reason_then_counts_per_session(client, sre):
    add_hook(sre, "Stop", STOP_TASK_COMPLETE)
    first = post_hook(client, sre, "claude-code", CLAUDE_STOP).json()
    assert first == {
        "decision": "block",
        "reason": "Please end your response with 'Task complete.'",
    }
    again = post_hook(client, sre, "claude-code", payload(CLAUDE_STOP, stop_hook_active=True))
    assert again.json()["decision"] == "block"
    assert RuntimeSession.objects.get(agent=sre.agent).stop_rejection_count == 2
    done = post_hook(
        client,
        sre,
        "claude-code",
        payload(CLAUDE_STOP, stop_hook_active=True, last_assistant_message="Done. Task complete."),
    )
    assert done.json() == {}
    assert RuntimeSession.objects.get(agent=sre.agent).stop_rejection_count == 0


def test_prompt_stop_hooks_stop_rejecting_after_max_rejections(client, sre, monkeypatch):
    add_hook(sre, "Stop", {"type": "prompt", "prompt": "Is it done?", "maxRejections": 1})
    # No LLM endpoint: the prompt hook errs; failMode block makes that a rejection.
    add_hook(
        sre,
        "Stop",
        {"type": "prompt", "prompt": "Really?", "failMode": "block", "maxRejections": 1},
    )
    monkeypatch.delenv("CONSOLE_LLM_BASE_URL", raising=False)
    first = post_hook(client, sre, "claude-code", CLAUDE_STOP).json()
    assert first["decision"] == "block"
    assert "Hook error (failMode block)" in first["reason"]
    second = post_hook(client, sre, "claude-code", payload(CLAUDE_STOP, stop_hook_active=True))
    assert second.json() == {}


def test_stop_is_let_through_at_the_hard_cap(client, sre):
    add_hook(sre, "Stop", STOP_TASK_COMPLETE)
    post_hook(client, sre, "claude-code", CLAUDE_STOP)
    RuntimeSession.objects.filter(agent=sre.agent).update(stop_rejection_count=25)
    capped = post_hook(client, sre, "claude-code", payload(CLAUDE_STOP, stop_hook_active=True))
    assert capped.json() == {}


def test_a_new_stop_cycle_starts_counting_again(client, sre):
    add_hook(sre, "Stop", STOP_TASK_COMPLETE)
    post_hook(client, sre, "claude-code", CLAUDE_STOP)
    RuntimeSession.objects.filter(agent=sre.agent).update(stop_rejection_count=25)
    fresh = post_hook(client, sre, "claude-code", payload(CLAUDE_STOP, stop_hook_active=False))
    assert fresh.json()["decision"] == "block"


def test_evaluate_only_records_the_deny_but_never_blocks(client, sre):
    agent_services.agent_set_mode(actor=None, agent=sre.agent, mode="evaluate_only")
    add_hook(sre, "PreToolUse", BLOCK_RM_RF)
    response = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    assert response.json() == {}
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert record.mode == "evaluate_only" and record.decision == "deny"


def test_an_event_the_console_cannot_govern_is_answered_no_objection_and_recorded(client, sre):
    add_hook(sre, "PreToolUse", {"type": "command", "matcher": "*", "command": "exit 2"})
    response = post_hook(client, sre, "claude-code", CLAUDE_SESSION_START)
    assert response.status_code == 200 and response.json() == {}
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert record.interception_point == "agent_startup"
    assert record.reason == "" and record.outcome == "warned"
    assert record.raw["verdict"]["warnings"][0]["reason"] == "console:not_governed"


def test_records_of_one_session_are_ordered_and_none_is_lost(client, sre):
    for _ in range(3):
        post_hook(client, sre, "claude-code", CLAUDE_PRE)
    post_hook(client, sre, "claude-code", CLAUDE_POST)
    rows = list(InterceptionRecord.objects.order_by("sequence"))
    assert len(rows) == 4 and len({row.sequence for row in rows}) == 4
    assert [row.interception_point for row in rows][-1] == "post_tool_call"


def test_the_custom_agents_hooks_run_after_the_agents(client, sre):
    custom = agent_services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    add_hook(sre, "PreToolUse", BLOCK_RM_RF, custom_agent=custom)
    plain = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    assert plain.json() == {}
    custom_run = post_hook(
        client,
        sre,
        "claude-code",
        payload(CLAUDE_PRE, tool_input=RM, session_id="other-session"),
        query="?custom_agent=triage",
    )
    assert custom_run.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert InterceptionRecord.objects.filter(custom_agent="triage").count() == 1


def test_an_unknown_custom_agent_is_404_and_nothing_is_written(client, sre):
    response = post_hook(client, sre, "claude-code", CLAUDE_PRE, query="?custom_agent=nope")
    assert response.status_code == 404
    assert "/custom_agent" in response.json()["error"]["fields"]
    assert not InterceptionRecord.objects.exists()


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        (payload(CLAUDE_PRE, hook_event_name="Telepathy"), "/hook_event_name"),
        (payload(CLAUDE_PRE, hook_event_name=None), "/hook_event_name"),
        (payload(CLAUDE_PRE, session_id=None), "/session_id"),
        (payload(CLAUDE_PRE, session_id=""), "/session_id"),
        (payload(CLAUDE_PRE, session_id="x" * 201), "/session_id"),
        (payload(CLAUDE_PRE, tool_name=None), "/tool_name"),
        (payload(CLAUDE_PRE, tool_name=7), "/tool_name"),
        (payload(CLAUDE_STOP, stop_hook_active="yes"), "/stop_hook_active"),
        (["not", "an", "object"], ""),
    ],
)
def test_bad_input_is_400_naming_the_field_and_nothing_is_written(client, sre, body, pointer):
    response = post_hook(client, sre, "claude-code", body)
    assert response.status_code == 400, response.content
    assert pointer in response.json()["error"]["fields"]
    assert not InterceptionRecord.objects.exists()
    assert not RuntimeSession.objects.exists()


def test_a_body_that_is_not_json_is_400(client, sre):
    response = post_hook(client, sre, "claude-code", None, raw=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed"


def test_an_unknown_runtime_is_404_in_the_error_shape(client, sre):
    response = post_hook(client, sre, "windsurf", CLAUDE_PRE)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert "claude-code" in response.json()["error"]["message"]


def test_only_agent_tokens_may_call(client, sre, alice):
    from console import services as console_services

    assert post_hook(client, None, "claude-code", CLAUDE_PRE).status_code == 401
    token = console_services.api_token_issue(actor=None, user=alice).plaintext
    as_admin = client.post(
        "/api/v1/hooks/claude-code",
        data="{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert as_admin.status_code == 403


def test_an_escalation_carries_runtime_session_and_cwd(client, sre, settings):
    settings.CONSOLE_DEFAULT_ESCALATION_SECONDS = 1
    add_hook(sre, "PreToolUse", {"type": "approval", "matcher": "Bash", "expiresIn": 1})
    response = post_hook(client, sre, "claude-code", CLAUDE_PRE)
    # Nobody decides within the second: the escalation expires, the call is denied.
    specific = response.json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "expired" in specific["permissionDecisionReason"]
    escalation = Escalation.objects.get(agent=sre.agent)
    assert escalation.framework == "claude-code"
    assert escalation.session_id == SESSION
    assert escalation.cwd == CWD
    assert escalation.tool_name == "Bash"
    assert escalation.arguments["command"] == "npm test"


def test_a_real_client_is_not_refused_by_the_csrf_check(sre):
    # Claude Code sends no cookie and no CSRF token: a bearer token is the only credential.
    strict = Client(enforce_csrf_checks=True)
    response = post_hook(strict, sre, "claude-code", CLAUDE_PRE)
    assert response.status_code == 200, response.content


def test_a_custom_agent_name_that_cannot_exist_is_404_without_a_query(client, sre):
    response = post_hook(
        client, sre, "claude-code", CLAUDE_PRE, query="?custom_agent=no%20such%20name!"
    )
    assert response.status_code == 404
