"""Result rules for command hooks: exit codes, JSON answers, failMode, Stop and ask."""

from __future__ import annotations

from typing import Any

import pytest

from console_client import run_command_hook
from console_client.sandbox import UNSANDBOXED_ENV


@pytest.fixture(autouse=True)
def _sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)


def command(source: str, **options: Any) -> dict[str, Any]:
    return {"type": "command", "command": source, "timeout": 10, **options}


def context(event: str = "PostToolUse", **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "agent_name": "sre-agent",
        "current_turn": 1,
        "max_turns": 40,
        "execution_summary": "/nonexistent/transcript.jsonl",
        "tool_name": "Bash",
        "tool_input": {"command": "echo hi"},
        **extra,
    }


def test_exit_0_without_output_allows() -> None:
    result = run_command_hook(command("exit 0"), context())
    assert (result.decision, result.error, result.exit_code) == ("allow", None, 0)


def test_exit_0_with_only_whitespace_allows() -> None:
    result = run_command_hook(command("printf '\\n  \\n'"), context())
    assert (result.decision, result.error) == ("allow", None)


def test_exit_0_with_extended_block_blocks() -> None:
    result = run_command_hook(
        command("""echo '{"decision": "block", "reason": "not on prod"}'"""), context()
    )
    assert (result.decision, result.reason, result.error) == ("block", "not on prod", None)


def test_exit_0_with_simple_ok_false_blocks() -> None:
    result = run_command_hook(command("""echo '{"ok": false, "reason": "no"}'"""), context())
    assert (result.decision, result.reason) == ("block", "no")


def test_exit_2_blocks_with_trimmed_stderr_as_reason() -> None:
    result = run_command_hook(command("echo '  Forbidden path  ' >&2; exit 2"), context())
    assert (result.decision, result.reason, result.exit_code) == ("block", "Forbidden path", 2)
    assert result.error is None


def test_exit_2_ignores_stdout_json() -> None:
    result = run_command_hook(command("""echo '{"ok": true}'; echo nope >&2; exit 2"""), context())
    assert (result.decision, result.reason) == ("block", "nope")


def test_exit_2_without_stderr_still_blocks_outside_stop() -> None:
    result = run_command_hook(command("exit 2"), context())
    assert result.decision == "block"
    assert result.reason


def test_stop_rejection_without_reason_counts_as_approval() -> None:
    stop = context("Stop", final_output="done")
    assert run_command_hook(command("""echo '{"ok": false}'"""), stop).decision == "allow"
    assert run_command_hook(command("exit 2"), stop).decision == "allow"


def test_ok_false_without_reason_blocks_outside_stop() -> None:
    result = run_command_hook(command("""echo '{"ok": false}'"""), context())
    assert result.decision == "block"


def test_stop_rejection_with_reason_blocks() -> None:
    result = run_command_hook(
        command("""echo '{"ok": false, "reason": "finish it"}'"""), context("Stop")
    )
    assert (result.decision, result.reason) == ("block", "finish it")


def test_pre_tool_use_ask_is_returned() -> None:
    result = run_command_hook(
        command("""echo '{"decision": "ask", "reason": "needs a human"}'"""),
        context("PreToolUse"),
    )
    assert (result.decision, result.reason, result.error) == ("ask", "needs a human", None)


def test_ask_at_post_tool_use_is_a_hook_error() -> None:
    result = run_command_hook(
        command("""echo '{"decision": "ask"}'""", failMode="block"), context("PostToolUse")
    )
    assert result.decision == "block"
    assert result.error is not None and "PreToolUse" in result.error


@pytest.mark.parametrize(
    ("source", "error_part"),
    [
        ("echo boom >&2; exit 1", "exited with code 1: boom"),
        ("exit 3", "exited with code 3"),
        ("echo 'this is not json'", "not a valid hook answer"),
        ("""echo '{"decision": "maybe"}'""", "decision must be"),
        ("kill -9 $$", "SIGKILL"),
    ],
)
@pytest.mark.parametrize("fail_mode", ["allow", "block"])
def test_hook_errors_are_decided_by_fail_mode(source: str, error_part: str, fail_mode: str) -> None:
    result = run_command_hook(command(source, failMode=fail_mode), context())
    assert result.error is not None and error_part in result.error
    if fail_mode == "allow":
        assert (result.decision, result.reason) == ("allow", "")
    else:
        assert result.decision == "block"
        assert error_part in result.reason


def test_fail_mode_defaults_to_allow() -> None:
    result = run_command_hook({"type": "command", "command": "exit 1"}, context())
    assert result.decision == "allow"
    assert result.error is not None


def test_unknown_fail_mode_fails_closed() -> None:
    result = run_command_hook(command("exit 1", failMode="sometimes"), context())
    assert result.decision == "block"


@pytest.mark.parametrize("fail_mode", ["allow", "block"])
def test_timeout_is_decided_by_fail_mode(fail_mode: str) -> None:
    result = run_command_hook(command("sleep 30", timeout=1, failMode=fail_mode), context())
    assert result.error is not None and "timed out after 1 s" in result.error
    assert result.decision == fail_mode
    assert result.duration_ms < 5000


@pytest.mark.parametrize(
    ("hook", "error_part"),
    [
        ({"type": "command", "timeout": 5}, "needs a non-empty command or script"),
        ({"type": "command", "command": "true", "script": "#!/bin/bash\n"}, "mutually exclusive"),
        ({"type": "command", "script": "#!/bin/sh\ntrue\n"}, "script must start with"),
        ({"type": "command", "command": "true", "timeout": 0}, "timeout must be a positive"),
        ({"type": "prompt", "prompt": "x"}, "not a command hook"),
    ],
)
def test_invalid_hooks_are_hook_errors(hook: dict[str, Any], error_part: str) -> None:
    result = run_command_hook({**hook, "failMode": "block"}, context())
    assert result.decision == "block"
    assert result.error is not None and error_part in result.error


def test_bash_script_runs_by_its_shebang() -> None:
    script = (
        '#!/bin/bash\nread -r line\necho "{\\"decision\\": \\"block\\", \\"reason\\": \\"$0\\"}"\n'
    )
    result = run_command_hook({"type": "command", "script": script}, context())
    assert (result.decision, result.reason) == ("block", "/hook/script")


def test_context_json_arrives_on_stdin() -> None:
    hook = command(
        'jq -c \'{decision: "allow", hookSpecificOutput: '
        '{additionalContext: (.tool_input.command + "|" + .execution_summary)}}\''
    )
    original = context(tool_input={"command": "rm -rf /tmp/x"})
    result = run_command_hook(hook, original)
    assert result.additional_context == "rm -rf /tmp/x|/hook/transcript.jsonl"
    # The caller's context is not rewritten.
    assert original["execution_summary"] == "/nonexistent/transcript.jsonl"


def test_hook_that_never_reads_a_large_stdin_still_runs() -> None:
    big = context(tool_result="x" * 2_000_000)
    result = run_command_hook(command("exit 0"), big)
    assert (result.decision, result.error) == ("allow", None)
