"""The three seed scripts of the hook examples, unchanged, through run_command_hook in the
sandbox."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from console_client import run_command_hook
from console_client.sandbox import UNSANDBOXED_ENV
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    SEED_CUSTOM_AGENT_YAML,
)


@pytest.fixture(autouse=True)
def _sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)


def _dangerous_command_hook() -> dict[str, Any]:
    return yaml.safe_load(SEED_CUSTOM_AGENT_YAML)["spec"]["hooks"]["PostToolUse"][0]


def _post_tool_use(tool_name: str, command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "agent_name": "sre-agent",
        "current_turn": 1,
        "max_turns": 40,
        "execution_summary": "/nonexistent/transcript.jsonl",
        "tool_name": tool_name,
        "tool_input": {"command": command},
        "tool_result": "ok",
        "tool_succeeded": True,
    }


def _stop(final_output: str) -> dict[str, Any]:
    return {
        "hook_event_name": "Stop",
        "agent_name": "sre-agent",
        "current_turn": 2,
        "max_turns": 40,
        "execution_summary": "/nonexistent/transcript.jsonl",
        "final_output": final_output,
        "stop_hook_active": False,
        "stop_rejection_count": 0,
    }


def test_dangerous_command_script_blocks_rm_rf() -> None:
    result = run_command_hook(_dangerous_command_hook(), _post_tool_use("Bash", "rm -rf /"))
    assert result.decision == "block"
    assert result.reason == r"Blocked: \brm\s+-rf\b"
    assert result.error is None
    assert result.exit_code == 0


def test_dangerous_command_script_blocks_sudo() -> None:
    result = run_command_hook(
        _dangerous_command_hook(), _post_tool_use("Bash", "sudo systemctl restart api")
    )
    assert (result.decision, result.reason) == ("block", r"Blocked: \bsudo\b")


def test_dangerous_command_script_allows_ls() -> None:
    result = run_command_hook(_dangerous_command_hook(), _post_tool_use("Bash", "ls -la"))
    assert result.decision == "allow"
    assert result.error is None
    assert result.reason == ""


def test_audit_script_allows_and_adds_context() -> None:
    hook = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]["PostToolUse"][0]
    result = run_command_hook(hook, _post_tool_use("Bash", "uptime"))
    assert result.decision == "allow"
    assert result.additional_context == "[AUDIT] Tool 'Bash' was executed."
    assert result.stderr.strip() == "Tool used: Bash"
    assert result.error is None


def test_stop_jq_script_without_marker_blocks_with_its_stderr() -> None:
    hook = yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"]["Stop"][0]
    result = run_command_hook(hook, _stop("The service is restarted."))
    assert result.decision == "block"
    assert result.reason == "Please end your response with 'Task complete.'"
    assert result.exit_code == 2


def test_stop_jq_script_with_marker_allows() -> None:
    hook = yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"]["Stop"][0]
    result = run_command_hook(hook, _stop("The service is restarted. Task complete."))
    assert result.decision == "allow"
    assert result.error is None
    assert result.exit_code == 0
