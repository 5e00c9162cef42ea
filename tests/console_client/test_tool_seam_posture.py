"""Posture `continue` at the tool seam (AGENT-HOOKS §13.1), through a real agent and a live
console: a host error at a tool call refuses that call, the model reads why, and the run
goes on; nothing else that halts a run is turned into `continue`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_framework import Agent, FunctionMiddleware, MiddlewareFailure, tool
from agent_hooks import InterceptionBlocked

from console_client.results import HookResult
from console_client.scripted import ScriptedChatClient, message_texts, say, tool_call

pytestmark = pytest.mark.asyncio

AUDIT = {"type": "command", "matcher": "*", "command": "echo '{}'"}
STOP = {"type": "command", "command": "exit 0"}


async def failing_runner(
    hook: dict[str, Any], context: dict[str, Any], *, transcript_path: str | None = None
) -> HookResult:
    """A hook runner with a defect: the interceptor raises, the SDK records a host error."""
    raise RuntimeError("runner defect")


def bash_agent(hooks, ran, *, middleware=(), script=None):
    @tool(name="Bash", description="Run a shell command (simulated).")
    def bash(command: str) -> str:
        ran.append(command)
        return f"SECRET-OUTPUT-OF {command}"

    client = ScriptedChatClient(script or [tool_call("Bash", {"command": "env"}, "c1"), say("ok")])
    agent = Agent(
        client=client, name="sre", tools=[bash], middleware=[hooks.middleware(), *middleware]
    )
    return client, agent


def refusal_seen(client) -> dict[str, Any]:
    (seen,) = message_texts(client.requests[1], role="tool")
    return json.loads(seen)


async def test_the_console_declares_continue(governed):
    hooks = governed({"PostToolUse": [AUDIT]}).hooks()
    posture = hooks.declaration.document["configuration"]["posture"]
    assert posture == {"tool_seam_host_error": "continue"}


async def test_a_host_error_after_a_tool_keeps_its_result_from_the_model_and_the_run_goes_on(
    governed,
):
    hooks = governed({"PostToolUse": [AUDIT]}).hooks(command_runner=failing_runner)
    ran: list[str] = []
    client, agent = bash_agent(hooks, ran)
    response = await hooks.run(agent, "show the environment")
    await hooks.aclose()
    assert ran == ["env"]  # post_tool_call comes after the tool
    assert response.text == "ok"  # the run went on: the model was asked again
    seen = refusal_seen(client)
    assert "SECRET-OUTPUT-OF" not in json.dumps(seen)
    assert seen["error"] == "Tool call blocked by agent-hooks at post_tool_call."
    assert seen["reason"].startswith("host_error:")
    post = next(r for r in hooks.last_records if r.interception_point.value == "post_tool_call")
    assert post.verdict.decision.value == "deny"
    assert post.verdict.reason == seen["reason"]


async def test_every_later_tool_call_is_judged_again(governed):
    hooks = governed({"PostToolUse": [AUDIT]}).hooks(command_runner=failing_runner)
    ran: list[str] = []
    script = [
        tool_call("Bash", {"command": "env"}, "c1"),
        tool_call("Bash", {"command": "id"}, "c2"),
        say("ok"),
    ]
    client, agent = bash_agent(hooks, ran, script=script)
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert ran == ["env", "id"]
    assert "SECRET-OUTPUT-OF" not in " ".join(message_texts(client.requests[2], role="tool"))
    posts = [r for r in hooks.last_records if r.interception_point.value == "post_tool_call"]
    assert [r.verdict.reason.startswith("host_error:") for r in posts] == [True, True]


class LaunderingMiddleware(FunctionMiddleware):
    """Another middleware's halt, carrying a genuine host-error record as its cause."""

    def __init__(self, record: Any) -> None:
        self.record = record

    async def process(self, context, call_next):
        raise MiddlewareFailure("another middleware halts") from InterceptionBlocked(self.record)


async def test_a_halt_the_hooks_did_not_raise_still_stops_the_run(governed):
    hooks = governed({"PostToolUse": [AUDIT]}).hooks(command_runner=failing_runner)
    client, agent = bash_agent(hooks, [])
    await hooks.run(agent, "go")
    genuine = next(r for r in hooks.last_records if r.interception_point.value == "post_tool_call")
    assert genuine.verdict.reason.startswith("host_error:")
    ran: list[str] = []
    client, agent = bash_agent(hooks, ran, middleware=[LaunderingMiddleware(genuine)])
    with pytest.raises(MiddlewareFailure, match="another middleware halts"):
        await hooks.run(agent, "go")
    await hooks.aclose()
    assert ran == []
    assert len(client.requests) == 1  # the model was not asked again


async def test_a_host_error_outside_the_tool_seam_still_ends_the_run(governed):
    hooks = governed({"Stop": [STOP]}).hooks(command_runner=failing_runner)
    client = ScriptedChatClient([say("done")])
    agent = Agent(client=client, name="sre", middleware=[hooks.middleware()])
    with pytest.raises(InterceptionBlocked) as blocked:
        await hooks.run(agent, "go")
    await hooks.aclose()
    assert blocked.value.result.interception_point.value == "output"
    assert blocked.value.result.verdict.reason.startswith("host_error:")
