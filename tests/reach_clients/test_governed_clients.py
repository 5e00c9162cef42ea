"""Real Claude Code, Codex CLI and Gemini CLI governed by the console.

Each client runs headless with the hook settings that `GET /api/v1/connect/{runtime}`
generates (Claude Code: `http` hooks to `POST /api/v1/hooks/claude-code`; Codex and Gemini
CLI: `console-hook RUNTIME` command hooks), against the scripted model endpoint. The
console, the model endpoint and the client all run in one loopback-only network namespace.
Hooks are configured on the console the way an admin would, with tool names as the runtime
names them; a reviewer and an auditor act over the console's API.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.reach_clients.clients import CLIENTS, Client
from tests.reach_clients.model_server import ScriptedModel, Text
from tests.reach_clients.netns import LoopbackNamespace
from tests.reach_clients.reviewing import decide, exported_records, wait_for_pending
from tests.reach_clients.servers import free_port

NO_RM_RF_REASON = "rm -rf is not allowed on this machine"
FREEZE = "Reminder: the change freeze starts at 17:00 UTC."
TESTS_FIRST = "Run the unit tests before you stop."


def no_rm_rf(tool: str) -> dict[str, Any]:
    """A console command hook: exit 2 (block) when the call's input holds `rm -rf`."""
    return {
        "type": "command",
        "matcher": tool,
        "command": f"if grep -q 'rm -rf'; then echo '{NO_RM_RF_REASON}' >&2; exit 2; fi",
    }


def approval(tool: str) -> dict[str, Any]:
    return {"type": "approval", "matcher": tool, "expiresIn": 300}


def change_freeze(tool: str) -> dict[str, Any]:
    answer = json.dumps({"hookSpecificOutput": {"additionalContext": FREEZE}})
    return {"type": "command", "matcher": tool, "command": f"echo '{answer}'"}


def stop_until_tested() -> dict[str, Any]:
    """A Stop hook that rejects the first stop of a session with a reason."""
    answer = json.dumps({"decision": "block", "reason": TESTS_FIRST})
    return {
        "type": "command",
        "command": f"if [ \"$(jq -r .stop_hook_active)\" = true ]; then exit 0; fi; echo '{answer}'",
    }


@pytest.fixture(params=sorted(CLIENTS))
def client(
    request: pytest.FixtureRequest,
    namespace: LoopbackNamespace,
    model: ScriptedModel,
    tmp_path: Path,
) -> Client:
    return CLIENTS[request.param](namespace, model, tmp_path)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "victim").mkdir(parents=True)
    (work / "victim" / "keep.txt").write_text("precious")
    return work


@pytest.fixture
def connect(governed: Callable[..., Any], client: Client) -> Callable[..., Any]:
    """`connect({"PreToolUse": [...]})` → the governed agent, its generated settings installed
    into the client."""

    def make(hooks: dict[str, list[dict[str, Any]]]) -> Any:
        agent = governed(hooks)
        client.install(agent.connect(client.runtime))
        return agent

    return make


def test_a_console_command_hook_blocks_rm_rf_and_the_directory_survives(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    agent = connect({"PreToolUse": [no_rm_rf(client.shell_tool)]})
    model.script(
        client.shell(f"touch {work}/harmless"),
        client.shell(f"rm -rf {work}/victim"),
        Text("The directory could not be removed."),
    )

    run = client.run("clean up", cwd=work, env=agent.client_env())

    assert run.returncode == 0, run
    assert (work / "harmless").exists()  # no objection: the first command ran
    assert (work / "victim" / "keep.txt").read_text() == "precious"
    # The model read the hook's reason as the result of its call.
    assert NO_RM_RF_REASON in model.requests[-1].dumps()


def test_an_approval_edited_by_the_reviewer_runs_the_edited_command(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    agent = connect({"PreToolUse": [approval(client.shell_tool)]})
    model.script(client.shell(f"rm -rf {work}/victim"), Text("Cleaned up."))

    started = client.start("clean up", cwd=work, env=agent.client_env())
    pending = wait_for_pending(agent, started)
    assert pending["tool_name"] == client.shell_tool
    assert pending["arguments"]["command"] == f"rm -rf {work}/victim"
    # (Not another `rm -rf`: Codex re-checks an edited command and refuses `rm -f` forms.)
    edited = {**pending["arguments"], "command": f"mv {work}/victim {work}/victim.old"}
    decide(agent, pending["id"], "approve", "Move it aside instead.", args=edited)
    run = started.wait()

    assert run.returncode == 0, run
    # The edited command ran, the original did not.
    assert (work / "victim.old" / "keep.txt").read_text() == "precious"
    assert not (work / "victim").exists()
    assert pending["session_id"] == client.session_id(run)


def test_a_rejection_runs_nothing_and_the_model_reads_the_reason(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    agent = connect({"PreToolUse": [approval(client.shell_tool)]})
    model.script(client.shell(f"rm -rf {work}/victim"), Text("Understood, I left it."))

    started = client.start("clean up", cwd=work, env=agent.client_env())
    pending = wait_for_pending(agent, started)
    decide(agent, pending["id"], "reject", "Not during the incident review.")
    run = started.wait()

    assert run.returncode == 0, run
    assert (work / "victim" / "keep.txt").exists()
    assert "Not during the incident review." in model.requests[-1].dumps()


def test_post_tool_use_additional_context_reaches_the_model(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    agent = connect({"PostToolUse": [change_freeze(client.shell_tool)]})
    model.script(client.shell("echo deployed-v2"), Text("Noted."))

    run = client.run("deploy", cwd=work, env=agent.client_env())

    assert run.returncode == 0, run
    after_tool = model.requests[-1].dumps()
    assert "deployed-v2" in after_tool  # the tool's own result is kept
    assert FREEZE in after_tool


def test_a_stop_rejection_makes_the_agent_continue_with_the_reason(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    agent = connect({"Stop": [stop_until_tested()]})
    model.script(Text("All done."), Text("Ran the unit tests: all pass."))

    run = client.run("fix the bug", cwd=work, env=agent.client_env())

    assert run.returncode == 0, run
    turns = [request for request in model.requests if request.body.get("tools")]
    assert len(turns) == 2, [turn.dumps()[-300:] for turn in turns]
    assert TESTS_FIRST not in turns[0].dumps()
    assert TESTS_FIRST in turns[1].dumps()


def test_when_the_console_is_down_the_tool_is_blocked(
    governed: Callable[..., Any],
    client: Client,
    model: ScriptedModel,
    namespace: LoopbackNamespace,
    work: Path,
) -> None:
    agent = governed({"PreToolUse": [no_rm_rf(client.shell_tool)]})
    nobody = f"http://127.0.0.1:{namespace.call(free_port)}"
    settings = json.dumps(agent.connect(client.runtime)).replace(agent.console.url, nobody)
    client.install(json.loads(settings))
    model.script(client.shell(f"touch {work}/should-not-exist"), Text("The hook failed."))

    run = client.run("touch it", cwd=work, env={**agent.client_env(), "CONSOLE_URL": nobody})

    assert run.returncode == 0, run
    assert not (work / "should-not-exist").exists()


@pytest.mark.parametrize("client", ["codex", "gemini-cli"], indirect=True)
def test_when_console_hook_cannot_run_the_tool_is_blocked(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    # console-hook not installed (or not on the client's PATH): the shell answers 127, which
    # Codex reads as "no objection" and Gemini CLI (like any exit but 0 and 2) as a warning.
    agent = connect({"PreToolUse": [no_rm_rf(client.shell_tool)]})
    model.script(client.shell(f"touch {work}/should-not-exist"), Text("The hook failed."))

    run = client.run("touch it", cwd=work, env={**agent.client_env(), "PATH": "/usr/bin:/bin"})

    assert run.returncode == 0, run
    assert not (work / "should-not-exist").exists()


def test_the_records_are_exported_and_carry_no_argument(
    connect: Callable[..., Any], client: Client, model: ScriptedModel, work: Path
) -> None:
    agent = connect(
        {
            "PreToolUse": [no_rm_rf(client.shell_tool)],
            "PostToolUse": [change_freeze(client.shell_tool)],
        }
    )
    marker = f"argument-{uuid.uuid4().hex}"
    model.script(client.shell(f"echo {marker} > {work}/out.txt"), Text("Written."))

    run = client.run("write it", cwd=work, env=agent.client_env())

    assert run.returncode == 0, run
    assert (work / "out.txt").read_text().strip() == marker
    session_id = client.session_id(run)
    rows, text = exported_records(
        agent, session_id=session_id, expect_points={"pre_tool_call", "post_tool_call"}
    )
    assert {row["interception_point"] for row in rows} >= {"pre_tool_call", "post_tool_call"}
    for row in rows:
        assert row["framework"] == client.runtime
        assert row["session_id"] == session_id
        if row["interception_point"] != "output":
            assert row["tool_name"] == client.shell_tool
    assert marker not in text
