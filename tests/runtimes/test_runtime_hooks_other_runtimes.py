"""POST /api/v1/hooks/{codex,gemini-cli,cursor,copilot}: the same hooks, evaluated on the
console, answered in each runtime's own format and recorded with `framework` = the runtime."""

from __future__ import annotations

import pytest

from audit.models import InterceptionRecord
from tests.console_client.test_runtimes import (
    COPILOT_PRE,
    CURSOR_SHELL,
    CURSOR_STOP,
    GEMINI_AFTER_AGENT,
    GEMINI_AFTER_TOOL,
)
from tests.runtimes.runtime_support import (
    AUDIT_CONTEXT,
    BLOCK_RM_RF,
    STOP_TASK_COMPLETE,
    add_hook,
    post_hook,
)

CODEX_PRE = {
    "session_id": "codex-session",
    "turn_id": "turn-1",
    "transcript_path": None,
    "cwd": "/home/dev/project",
    "hook_event_name": "PreToolUse",
    "model": "gpt-5-codex",
    "permission_mode": "default",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build"},
    "tool_use_id": "call_1",
}


@pytest.fixture
def blocks_rm(sre):
    add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "matcher": "Bash|Shell|bash"})
    return sre


def test_codex_pre_tool_use_deny(client, blocks_rm):
    body = post_hook(client, blocks_rm, "codex", CODEX_PRE).json()
    assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
    record = InterceptionRecord.objects.get()
    assert (record.framework, record.session_id, record.outcome) == (
        "codex",
        "codex-session",
        "denied",
    )


def test_gemini_after_tool_context_and_after_agent_retry(client, sre):
    add_hook(sre, "PostToolUse", AUDIT_CONTEXT)
    add_hook(sre, "Stop", STOP_TASK_COMPLETE)
    after_tool = post_hook(client, sre, "gemini-cli", GEMINI_AFTER_TOOL).json()
    assert after_tool["hookSpecificOutput"]["additionalContext"] == (
        "[AUDIT] Tool 'run_shell_command' was executed."
    )
    after_agent = post_hook(client, sre, "gemini-cli", GEMINI_AFTER_AGENT).json()
    assert after_agent["decision"] == "deny"
    assert "Task complete." in after_agent["reason"]
    assert set(InterceptionRecord.objects.values_list("framework", flat=True)) == {"gemini-cli"}


def test_cursor_shell_command_is_matched_as_shell(client, blocks_rm):
    body = {**CURSOR_SHELL, "command": "rm -rf node_modules"}
    answer = post_hook(client, blocks_rm, "cursor", body).json()
    assert answer["permission"] == "deny"
    assert "rm -rf" in answer["agent_message"]
    assert InterceptionRecord.objects.get().tool_name == "Shell"


def test_cursor_stop_asks_for_a_followup(client, sre):
    add_hook(sre, "Stop", STOP_TASK_COMPLETE)
    answer = post_hook(client, sre, "cursor", CURSOR_STOP).json()
    assert answer == {"followup_message": "Please end your response with 'Task complete.'"}


def test_copilot_pre_tool_use_named_by_query(client, blocks_rm):
    body = {**COPILOT_PRE, "toolArgs": '{"command": "rm -rf /tmp/x"}'}
    answer = post_hook(client, blocks_rm, "copilot", body, query="?event=preToolUse").json()
    assert answer["permissionDecision"] == "deny"


def test_copilot_without_an_event_name_is_400(client, sre):
    response = post_hook(client, sre, "copilot", COPILOT_PRE)
    assert response.status_code == 400
    assert "/hook_event_name" in response.json()["error"]["fields"]
    assert not InterceptionRecord.objects.exists()
