"""What each pinned client really sends to a hook and does with the answer, pinned against a
hook recorder (no console): the facts the console's adapters rely on. A client upgrade that
changes them fails here first, with the body it sent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.reach_clients.clients import ClaudeCode, Codex, GeminiCli
from tests.reach_clients.model_server import ScriptedModel, Text, ToolCall
from tests.reach_clients.netns import LoopbackNamespace
from tests.reach_clients.servers import HookRecorder

RELAY = Path(__file__).with_name("relay.py")


def deny_rm(reason: str, shape: str) -> Any:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if "rm -rf" not in str(body.get("tool_input")):
            return {}
        if shape == "gemini":
            return {"decision": "deny", "reason": reason}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }

    return answer


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "victim").mkdir(parents=True)
    (work / "victim" / "keep.txt").write_text("precious")
    return work


def test_claude_code_posts_pre_tool_use_to_an_http_hook_and_obeys_its_deny(
    namespace: LoopbackNamespace,
    model: ScriptedModel,
    recorder: HookRecorder,
    victim: Path,
    tmp_path: Path,
) -> None:
    claude = ClaudeCode(namespace, model, tmp_path)
    http_hook = {
        "type": "http",
        "url": recorder.url,
        "headers": {"Authorization": "Bearer $CONSOLE_TOKEN"},
        "allowedEnvVars": ["CONSOLE_TOKEN"],
        "timeout": 30,
    }
    claude.use_settings(
        {
            "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [http_hook]}],
                "Stop": [{"hooks": [http_hook]}],
            }
        }
    )
    recorder.answer_with(deny_rm("rm -rf is forbidden here (recorder)", "claude"))
    model.script(
        ToolCall("Bash", {"command": f"rm -rf {victim}/victim", "description": "clean up"}),
        Text("I could not remove it."),
    )

    run = claude.run("clean up", cwd=victim, env={"CONSOLE_TOKEN": "tok-123"})

    assert run.returncode == 0, run
    assert (victim / "victim" / "keep.txt").exists()
    assert recorder.events() == ["PreToolUse", "Stop"]
    pre, stop = recorder.calls
    assert pre.headers["Authorization"] == "Bearer tok-123"
    assert pre.headers["Content-Type"].startswith("application/json")
    assert pre.body["tool_name"] == "Bash"
    assert pre.body["tool_input"]["command"] == f"rm -rf {victim}/victim"
    assert pre.body["cwd"] == str(victim)
    assert pre.body["tool_use_id"].startswith("toolu_")
    for key in ("session_id", "transcript_path", "prompt_id", "permission_mode"):
        assert pre.body[key], key
    assert stop.body["stop_hook_active"] is False
    assert stop.body["session_id"] == pre.body["session_id"] == run.json()["session_id"]
    # The deny reason is what the model reads in the tool result.
    tool_result = model.requests[-1].dumps()
    assert "rm -rf is forbidden here (recorder)" in tool_result
    assert '"is_error": true' in tool_result


def test_codex_runs_pre_tool_use_command_hooks_from_codex_home_and_obeys_their_deny(
    namespace: LoopbackNamespace,
    model: ScriptedModel,
    recorder: HookRecorder,
    victim: Path,
    tmp_path: Path,
) -> None:
    codex = Codex(namespace, model, tmp_path)
    relay = {
        "type": "command",
        "command": f"{sys.executable} {RELAY} {recorder.url}",
        "timeout": 30,
    }
    codex.use_hooks(
        {
            "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [relay]}],
                "Stop": [{"hooks": [relay]}],
            }
        }
    )
    recorder.answer_with(deny_rm("rm -rf is forbidden here (recorder)", "codex"))
    model.script(
        ToolCall("exec_command", {"cmd": f"rm -rf {victim}/victim"}),
        Text("I could not remove it."),
    )

    run = codex.run("clean up", cwd=victim)

    assert run.returncode == 0, run
    assert (victim / "victim" / "keep.txt").exists()
    assert recorder.events() == ["PreToolUse", "Stop"]
    pre = recorder.calls[0].body
    assert pre["tool_name"] == "Bash"
    assert pre["tool_input"] == {"command": f"rm -rf {victim}/victim"}
    assert pre["cwd"] == str(victim)
    for key in ("session_id", "turn_id", "tool_use_id", "model", "permission_mode"):
        assert pre[key], key
    assert "rm -rf is forbidden here (recorder)" in model.requests[-1].dumps()


def test_gemini_cli_runs_before_tool_command_hooks_and_obeys_their_deny(
    namespace: LoopbackNamespace,
    model: ScriptedModel,
    recorder: HookRecorder,
    victim: Path,
    tmp_path: Path,
) -> None:
    gemini = GeminiCli(namespace, model, tmp_path)
    relay = {
        "type": "command",
        "name": "recorder",
        "command": f"{sys.executable} {RELAY} {recorder.url}",
        "timeout": 30000,
    }
    gemini.use_settings(
        {
            "hooks": {
                "BeforeTool": [{"matcher": ".*", "hooks": [relay]}],
                "AfterAgent": [{"hooks": [relay]}],
            }
        }
    )
    recorder.answer_with(deny_rm("rm -rf is forbidden here (recorder)", "gemini"))
    model.script(
        ToolCall("run_shell_command", {"command": f"rm -rf {victim}/victim"}),
        Text("I could not remove it."),
    )

    run = gemini.run("clean up", cwd=victim)

    assert run.returncode == 0, run
    assert (victim / "victim" / "keep.txt").exists()
    assert recorder.events() == ["BeforeTool", "AfterAgent"]
    before, after = (call.body for call in recorder.calls)
    assert before["tool_name"] == "run_shell_command"
    assert before["tool_input"] == {"command": f"rm -rf {victim}/victim"}
    assert before["cwd"] == str(victim)
    for key in ("session_id", "transcript_path", "timestamp"):
        assert before[key], key
    # Gemini CLI 0.61 repeats the last streamed chunk in `prompt_response` ("... remove it.
    # remove it."): the start is what the model said.
    assert after["prompt_response"].startswith("I could not remove it.")
    assert after["stop_hook_active"] is False
    assert "rm -rf is forbidden here (recorder)" in model.requests[-1].dumps()
