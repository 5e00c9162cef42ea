"""console_client.runtimes: each runtime's hook input read, and the console's reply written
in that runtime's own output format (payloads from the runtimes' documentation)."""

from __future__ import annotations

import json

import pytest

from console_client.runtime_answers import answer, failure
from console_client.runtimes import (
    NO_OBJECTION,
    Reply,
    RuntimeInputError,
    parse,
)

SESSION = "sess-1"
GEMINI_AFTER_TOOL = {
    "session_id": SESSION,
    "transcript_path": "/t.json",
    "cwd": "/w",
    "hook_event_name": "AfterTool",
    "timestamp": "2026-12-01T10:00:00.000Z",
    "tool_name": "run_shell_command",
    "tool_input": {"command": "ls"},
    "tool_response": {"llmContent": "a b", "returnDisplay": "a b", "error": None},
}
GEMINI_AFTER_AGENT = {
    "session_id": SESSION,
    "cwd": "/w",
    "hook_event_name": "AfterAgent",
    "prompt": "fix it",
    "prompt_response": "Fixed.",
    "stop_hook_active": True,
}
CURSOR_SHELL = {
    "hook_event_name": "beforeShellExecution",
    "conversation_id": "conv-123",
    "generation_id": "gen-456",
    "workspace_roots": ["/path/to/project"],
    "command": "npm install express",
    "cwd": "/path/to/project",
}
CURSOR_MCP = {
    "hook_event_name": "beforeMCPExecution",
    "conversation_id": "conv-123",
    "generation_id": "gen-456",
    "workspace_roots": ["/path/to/project"],
    "tool_name": "database_query",
    "tool_input": '{"query": "SELECT * FROM users"}',
    "url": "http://localhost:3000",
}
CURSOR_READ = {
    "hook_event_name": "beforeReadFile",
    "conversation_id": "conv-123",
    "generation_id": "gen-456",
    "workspace_roots": ["/path/to/project"],
    "file_path": "/path/to/project/secrets.env",
    "content": "API_KEY=...",
}
CURSOR_STOP = {
    "hook_event_name": "stop",
    "conversation_id": "conv-123",
    "generation_id": "gen-456",
    "workspace_roots": ["/p"],
    "status": "completed",
    "loop_count": 0,
}
COPILOT_PRE = {
    "sessionId": SESSION,
    "timestamp": 1764583200000,
    "cwd": "/w",
    "toolName": "bash",
    "toolArgs": '{"command": "ls"}',
}
COPILOT_VSCODE_PRE = {
    "hook_event_name": "PreToolUse",
    "session_id": SESSION,
    "timestamp": "2026-12-01T10:00:00Z",
    "cwd": "/w",
    "tool_name": "bash",
    "tool_input": {"command": "ls"},
}


def test_gemini_after_tool_reads_the_result_and_writes_additional_context():
    event = parse("gemini-cli", GEMINI_AFTER_TOOL)
    assert event.event == "PostToolUse" and event.tool_name == "run_shell_command"
    assert event.tool_result["llmContent"] == "a b" and not event.tool_failed
    assert answer(event, Reply("context", "[AUDIT]")) == {
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "[AUDIT]"}
    }
    assert answer(event, Reply("deny", "hidden")) == {"decision": "deny", "reason": "hidden"}


def test_gemini_after_agent_is_stop_and_deny_makes_it_retry():
    event = parse("gemini-cli", GEMINI_AFTER_AGENT)
    assert event.event == "Stop" and event.final_output == "Fixed."
    assert event.stop_hook_active is True
    assert answer(event, Reply("continue", "say done")) == {
        "decision": "deny",
        "reason": "say done",
    }


def test_gemini_merges_edits_so_an_edit_that_removes_arguments_is_refused():
    body = {**GEMINI_AFTER_TOOL, "hook_event_name": "BeforeTool", "tool_input": {"a": 1, "b": 2}}
    event = parse("gemini-cli", body)
    assert answer(event, Reply("allow", "ok", {"a": 3, "b": 2})) == {
        "decision": "allow",
        "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"a": 3, "b": 2}},
    }
    refused = answer(event, Reply("allow", "ok", {"a": 3}))
    assert refused["decision"] == "deny" and "b removed" in refused["reason"]


def test_cursor_shell_mcp_and_read_map_onto_pre_tool_use():
    shell = parse("cursor", CURSOR_SHELL)
    assert (shell.event, shell.tool_name, shell.session_id) == ("PreToolUse", "Shell", "conv-123")
    assert shell.tool_input == {"command": "npm install express", "cwd": "/path/to/project"}
    mcp = parse("cursor", CURSOR_MCP)
    assert mcp.tool_name == "database_query"
    assert mcp.tool_input == {"query": "SELECT * FROM users"}
    read = parse("cursor", CURSOR_READ)
    assert read.tool_name == "Read" and read.tool_input == {"file_path": CURSOR_READ["file_path"]}
    assert "API_KEY" not in json.dumps(read.tool_input)
    assert answer(shell, Reply("deny", "no")) == {
        "permission": "deny",
        "user_message": "no",
        "agent_message": "no",
    }


def test_cursor_cannot_apply_edits_to_a_shell_command_so_it_is_denied():
    shell = parse("cursor", CURSOR_SHELL)
    refused = answer(shell, Reply("allow", "ok", {"command": "npm ci"}))
    assert refused["permission"] == "deny"
    assert answer(shell, Reply("allow", "ok")) == {"permission": "allow"}


def test_cursor_stop_continues_with_a_followup_and_loop_count_says_active():
    event = parse("cursor", CURSOR_STOP)
    assert event.event == "Stop" and event.stop_hook_active is False
    assert parse("cursor", {**CURSOR_STOP, "loop_count": 2}).stop_hook_active is True
    assert answer(event, Reply("continue", "go on")) == {"followup_message": "go on"}
    assert answer(event, NO_OBJECTION) == {}


def test_copilot_camel_case_needs_its_event_named():
    with pytest.raises(RuntimeInputError) as raised:
        parse("copilot", COPILOT_PRE)
    assert "/hook_event_name" in raised.value.fields
    event = parse("copilot", COPILOT_PRE, "preToolUse")
    assert event.event == "PreToolUse" and event.tool_input == {"command": "ls"}
    assert answer(event, Reply("allow", "ok", {"command": "ls -la"})) == {
        "permissionDecision": "allow",
        "permissionDecisionReason": "ok",
        "modifiedArgs": {"command": "ls -la"},
    }


def test_copilot_vscode_form_names_its_event():
    event = parse("copilot", COPILOT_VSCODE_PRE)
    assert event.event == "PreToolUse" and event.session_id == SESSION
    assert answer(event, Reply("deny", "no")) == {
        "permissionDecision": "deny",
        "permissionDecisionReason": "no",
    }


def test_codex_answers_like_claude_code():
    body = {
        "session_id": SESSION,
        "turn_id": "t1",
        "cwd": "/w",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "done",
    }
    event = parse("codex", body)
    assert answer(event, Reply("continue", "more")) == {"decision": "block", "reason": "more"}


def test_an_event_that_is_only_recorded_is_answered_no_objection():
    event = parse("cursor", {**CURSOR_SHELL, "hook_event_name": "beforeSubmitPrompt"})
    assert not event.governed
    assert answer(event, Reply("deny", "x")) == {"continue": True}


def test_long_reasons_are_capped_for_the_runtime():
    event = parse("codex", {**GEMINI_AFTER_AGENT, "hook_event_name": "Stop"})
    reply = answer(event, Reply("continue", "x" * 20_000))
    assert len(reply["reason"]) == 10_000


@pytest.mark.parametrize(
    ("runtime", "event", "exit_code", "stdout_key"),
    [
        ("claude-code", "PreToolUse", 2, None),
        ("codex", "PreToolUse", 2, None),
        ("gemini-cli", "BeforeTool", 2, None),
        ("cursor", "beforeShellExecution", 0, "permission"),
        ("copilot", "preToolUse", 0, "permissionDecision"),
    ],
)
def test_failure_blocks_pre_tool_events_the_way_each_runtime_reads_it(
    runtime, event, exit_code, stdout_key
):
    result = failure(runtime, event, "down", fail_open=False)
    assert result.exit_code == exit_code
    if stdout_key:
        assert json.loads(result.stdout)[stdout_key] == "deny"
    assert "down" in result.stderr


def test_failure_lets_other_events_through():
    assert failure("gemini-cli", "AfterTool", "down", fail_open=False).exit_code == 0
    assert failure("codex", "PreToolUse", "down", fail_open=True).exit_code == 0
