"""PostToolUse semantics through a real agent and a live console."""

from __future__ import annotations

import json

import pytest
import yaml
from agent_framework import Agent, tool

from console_client.scripted import ScriptedChatClient, message_texts, say, tool_call
from demo.documents import AUDIT_ALL_TOOLS_HOOK_YAML, SEED_CUSTOM_AGENT_YAML

pytestmark = pytest.mark.asyncio

DANGEROUS = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)["spec"]["hooks"]["PostToolUse"][0]
AUDIT = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]["PostToolUse"][0]


def context_hook(text: str, matcher: str = "*") -> dict:
    output = {"decision": "allow", "hookSpecificOutput": {"additionalContext": text}}
    return {"type": "command", "matcher": matcher, "command": f"echo '{json.dumps(output)}'"}


def block_hook(matcher: str, reason: str = "no") -> dict:
    return {"type": "command", "matcher": matcher, "command": f"echo {reason} >&2; exit 2"}


def bash_agent(hooks, script, ran):
    @tool(name="Bash", description="Run a shell command (simulated).")
    def bash(command: str) -> str:
        ran.append(command)
        return f"OUTPUT-OF {command}"

    client = ScriptedChatClient(script)
    return client, Agent(client=client, name="sre", tools=[bash], middleware=[hooks.middleware()])


def tool_messages(request):
    return message_texts(request, role="tool")


async def test_block_drops_the_result_and_the_model_gets_the_reason(governed):
    gov = governed(custom={"my_hooked_agent": {"PostToolUse": [DANGEROUS]}})
    hooks = gov.hooks("my_hooked_agent")
    ran: list[str] = []
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "rm -rf /var/tmp/x"}, "c1"), say("ok")], ran
    )
    await hooks.run(agent, "clean up")
    await hooks.aclose()
    assert ran == ["rm -rf /var/tmp/x"]  # PostToolUse runs after the tool
    seen = " ".join(tool_messages(client.requests[1]))
    assert "OUTPUT-OF" not in seen
    assert "Blocked: \\\\brm\\\\s+-rf\\\\b" in seen or "Blocked: \\brm\\s+-rf\\b" in seen
    post = [r for r in hooks.last_records if r.interception_point.value == "post_tool_call"]
    assert post[0].verdict.decision.value == "deny"


async def test_an_allowed_result_reaches_the_model_unchanged(governed):
    gov = governed(custom={"my_hooked_agent": {"PostToolUse": [DANGEROUS]}})
    hooks = gov.hooks("my_hooked_agent")
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")], []
    )
    await hooks.run(agent, "how long up?")
    await hooks.aclose()
    assert tool_messages(client.requests[1]) == ["OUTPUT-OF uptime"]


async def test_seed_audit_hook_context_reaches_the_model_as_a_user_message(governed):
    gov = governed({"PostToolUse": [AUDIT]})
    hooks = gov.hooks()
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")], []
    )
    await hooks.run(agent, "how long up?")
    await hooks.aclose()
    second = client.requests[1]
    roles = [str(m.role.value if hasattr(m.role, "value") else m.role) for m in second]
    assert roles == ["user", "assistant", "tool", "user"]
    assert message_texts(second)[-1] == "[AUDIT] Tool 'Bash' was executed."


async def test_every_matching_hook_runs_and_the_last_context_wins(governed):
    first, second = context_hook("first context"), context_hook("second context", "Bash")
    gov = governed({"PostToolUse": [first, second]})
    hooks = gov.hooks()
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")], []
    )
    await hooks.run(agent, "go")
    await hooks.aclose()
    user_texts = message_texts(client.requests[1], role="user")
    assert user_texts == ["go", "second context"]
    post = next(r for r in hooks.last_records if r.interception_point.value == "post_tool_call")
    assert [v.decision.value for v in post.verdicts] == ["allow", "allow", "allow"]
    assert len(post.verdicts) == 3  # the base binding and both hooks ran


async def test_agent_level_hooks_run_before_the_custom_agents(governed):
    gov = governed(
        {"PostToolUse": [context_hook("agent level")]},
        custom={"ops": {"PostToolUse": [context_hook("custom agent")]}},
    )
    hooks = gov.hooks("ops")
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")], []
    )
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert message_texts(client.requests[1], role="user")[-1] == "custom agent"


async def test_context_stays_in_later_model_calls_of_the_session(governed):
    gov = governed({"PostToolUse": [context_hook("remember me", "Bash")]})
    hooks = gov.hooks()
    client, agent = bash_agent(
        hooks,
        [
            tool_call("Bash", {"command": "uptime"}, "c1"),
            tool_call("Bash", {"command": "df"}, "c2"),
            say("ok"),
        ],
        [],
    )
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert message_texts(client.requests[2], role="user") == ["go", "remember me", "remember me"]


async def test_matcher_is_anchored_and_case_sensitive(governed):
    gov = governed({"PostToolUse": [block_hook("bash|Bas"), block_hook("")]})
    hooks = gov.hooks()
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")], []
    )
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert tool_messages(client.requests[1]) == ["OUTPUT-OF uptime"]


async def test_evaluate_only_lets_the_result_through_and_injects_nothing(governed):
    gov = governed(
        {"PostToolUse": [block_hook("Bash", "would-block"), context_hook("extra")]},
        mode="evaluate_only",
    )
    hooks = gov.hooks()
    client, agent = bash_agent(
        hooks, [tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")], []
    )
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert tool_messages(client.requests[1]) == ["OUTPUT-OF uptime"]
    assert message_texts(client.requests[1], role="user") == ["go"]
    post = next(r for r in hooks.last_records if r.interception_point.value == "post_tool_call")
    assert post.verdict.decision.value == "deny" and post.mode.value == "evaluate_only"


async def test_post_tool_use_hooks_run_only_after_a_successful_tool(governed):
    hooks = governed({"PostToolUse": [block_hook("*", "hook-ran")]}).hooks()

    @tool(name="Broken", description="Always fails.")
    def broken(command: str) -> str:
        raise RuntimeError("tool exploded")

    client = ScriptedChatClient([tool_call("Broken", {"command": "x"}, "c1"), say("ok")])
    agent = Agent(client=client, name="sre", tools=[broken], middleware=[hooks.middleware()])
    await hooks.run(agent, "go")
    await hooks.aclose()
    seen = " ".join(tool_messages(client.requests[1]))
    assert "hook-ran" not in seen
    assert "Error" in seen


async def test_running_the_agent_outside_hooks_run_fails_closed(governed):
    hooks = governed().hooks()
    ran: list[str] = []
    client, agent = bash_agent(hooks, [tool_call("Bash", {"command": "ls"}, "c1"), say("ok")], ran)
    with pytest.raises(RuntimeError, match="hooks.run"):
        await agent.run("go")
    assert ran == [] and client.requests == []
