"""Stop semantics: rejection loops, the context flags, maxRejections and the hard cap."""

from __future__ import annotations

import json

import pytest
import yaml
from agent_framework import Agent, tool

from console_client.client import STOP_REJECTION_CAP
from console_client.scripted import ScriptedChatClient, message_texts, say, tool_call
from demo.documents import COMPLETION_MARKER_STOP_HOOK_YAML
from tests.console_client.scripted_http import ScriptedHTTP

pytestmark = pytest.mark.asyncio

SEED_STOP = yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"]["Stop"][0]
FLAGS_STOP = {
    "type": "command",
    "script": "#!/bin/bash\n"
    "CONTEXT=$(cat)\n"
    "COUNT=$(echo \"$CONTEXT\" | jq -r '.stop_rejection_count')\n"
    "ACTIVE=$(echo \"$CONTEXT\" | jq -r '.stop_hook_active')\n"
    'if [ "$COUNT" -lt 2 ]; then echo "count=$COUNT active=$ACTIVE" >&2; exit 2; fi\n'
    "exit 0\n",
}


def agent_for(hooks, script=(), responder=None):
    client = ScriptedChatClient(script, responder=responder)
    return client, Agent(client=client, name="sre", middleware=[hooks.middleware()])


def last_user_text(request) -> str:
    return message_texts(request, role="user")[-1]


async def test_seed_stop_hook_makes_the_agent_continue_until_it_complies(governed):
    hooks = governed({"Stop": [SEED_STOP]}).hooks()
    client, agent = agent_for(hooks, [say("Restarted api."), say("Restarted api. Task complete.")])
    response = await hooks.run(agent, "fix api")
    await hooks.aclose()
    assert response.text == "Restarted api. Task complete."
    assert len(client.requests) == 2
    assert last_user_text(client.requests[1]) == "Please end your response with 'Task complete.'"
    # The model saw its own first answer before the reason.
    assert message_texts(client.requests[1], role="assistant") == ["Restarted api."]


async def test_hook_context_carries_stop_hook_active_and_the_rejection_count(governed):
    hooks = governed({"Stop": [FLAGS_STOP]}).hooks()
    client, agent = agent_for(hooks, responder=lambda messages: say("answer"))
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert len(client.requests) == 3
    assert last_user_text(client.requests[1]) == "count=0 active=false"
    assert last_user_text(client.requests[2]) == "count=1 active=true"


async def test_a_rejection_without_reason_counts_as_approval(governed):
    hooks = governed({"Stop": [{"type": "command", "command": "exit 2"}]}).hooks()
    client, agent = agent_for(hooks, [say("done")])
    response = await hooks.run(agent, "go")
    await hooks.aclose()
    assert response.text == "done"
    assert len(client.requests) == 1


async def test_command_stop_hooks_end_at_the_hard_cap_with_the_answer_marked(governed):
    always = {"type": "command", "command": "echo again >&2; exit 2"}
    hooks = governed({"Stop": [always]}).hooks()
    client, agent = agent_for(hooks, responder=lambda messages: say("answer"))
    response = await hooks.run(agent, "go")
    await hooks.aclose()
    assert len(client.requests) == STOP_REJECTION_CAP + 1
    marker = response.additional_properties["console_hooks"]
    assert marker["stop_cap_reached"] is True
    assert marker["last_stop_reasons"] == ["again"]


@pytest.fixture
def judge(monkeypatch):
    """An OpenAI-compatible judge on loopback that always rejects."""
    answer = {"ok": False, "reason": "Add the ticket number."}
    server = ScriptedHTTP().start()
    server.route(
        "POST",
        "/v1/chat/completions",
        (200, {"choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}}]}),
    )
    monkeypatch.setenv("CONSOLE_LLM_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("CONSOLE_LLM_MODELS", "ReasoningFast=judge-small")
    yield server
    server.stop()


def prompt_stop(max_rejections: int) -> dict:
    return {"type": "prompt", "prompt": "Judge: $ARGUMENTS", "maxRejections": max_rejections}


async def test_max_rejections_bounds_prompt_stop_hooks(governed, judge):
    hooks = governed({"Stop": [prompt_stop(2)]}).hooks()
    client, agent = agent_for(hooks, responder=lambda messages: say("answer"))
    response = await hooks.run(agent, "go")
    await hooks.aclose()
    assert len(client.requests) == 3  # the answer, then two rejections
    assert last_user_text(client.requests[2]) == "Add the ticket number."
    assert "console_hooks" not in response.additional_properties
    assert len([s for s in judge.seen if s.path == "/v1/chat/completions"]) == 2
    assert judge.seen[0].body["model"] == "judge-small"


async def test_the_maximum_max_rejections_over_prompt_hooks_applies(governed, judge):
    hooks = governed({"Stop": [prompt_stop(1)]}, custom={"ops": {"Stop": [prompt_stop(3)]}}).hooks(
        "ops"
    )
    client, agent = agent_for(hooks, responder=lambda messages: say("answer"))
    await hooks.run(agent, "go")
    await hooks.aclose()
    assert len(client.requests) == 4


async def test_evaluate_only_records_the_rejection_but_never_continues(governed):
    hooks = governed({"Stop": [SEED_STOP]}, mode="evaluate_only").hooks()
    client, agent = agent_for(hooks, [say("Restarted api.")])
    response = await hooks.run(agent, "fix api")
    await hooks.aclose()
    assert response.text == "Restarted api."
    assert len(client.requests) == 1
    output = next(r for r in hooks.last_records if r.interception_point.value == "output")
    assert output.mode.value == "evaluate_only"
    assert [w.reason for w in output.verdict.warnings] == ["console:stop_rejected"]


# current_turn / max_turns across Stop continuations

TURN_STOP = {
    "type": "command",
    "script": "#!/bin/bash\n"
    "CONTEXT=$(cat)\n"
    "COUNT=$(echo \"$CONTEXT\" | jq -r '.stop_rejection_count')\n"
    'TURNS=$(echo "$CONTEXT" | jq -r \'"turn=\\(.current_turn) max=\\(.max_turns)"\')\n'
    'if [ "$COUNT" -lt 2 ]; then echo "$TURNS" >&2; exit 2; fi\n'
    "exit 0\n",
}
ALWAYS_TURN_STOP = {
    "type": "command",
    "command": "jq -r '\"turn=\\(.current_turn) max=\\(.max_turns)\"' >&2; exit 2",
}
POST_TURN = {
    "type": "command",
    "matcher": "*",
    "command": "jq -c '{hookSpecificOutput: {additionalContext: "
    '"post turn=\\(.current_turn) max=\\(.max_turns)"}}\'',
}


def tool_agent(hooks, responder, max_iterations):
    @tool(name="Bash", description="Run a shell command (simulated).")
    def bash(command: str) -> str:
        return f"OUTPUT-OF {command}"

    client = ScriptedChatClient(responder=responder)
    client.function_invocation_configuration["max_iterations"] = max_iterations
    return client, Agent(client=client, name="sre", tools=[bash], middleware=[hooks.middleware()])


def tool_then_answer(messages):
    """Each run: one tool call, then (after its result) the answer."""
    real = [m for m in messages if not message_texts([m])[0].startswith("post turn=")]
    if str(getattr(real[-1].role, "value", real[-1].role)) == "tool":
        return say("answer")
    return tool_call("Bash", {"command": "uptime"}, f"c{len(messages)}")


async def test_current_turn_counts_on_across_stop_continuations(governed):
    hooks = governed({"Stop": [TURN_STOP], "PostToolUse": [POST_TURN]}).hooks()
    client, agent = tool_agent(hooks, tool_then_answer, max_iterations=3)
    await hooks.run(agent, "go")
    await hooks.aclose()
    # Three runs (two rejections) of two model calls each.
    assert len(client.requests) == 6
    # max_turns: (3 iterations + the final tools-off call) x (1 run + 25 continuations).
    max_turns = (3 + 1) * (1 + STOP_REJECTION_CAP)
    assert last_user_text(client.requests[2]) == f"turn=2 max={max_turns}"
    assert last_user_text(client.requests[4]) == f"turn=4 max={max_turns}"
    post_contexts = [
        text
        for text in message_texts(client.requests[-1], role="user")
        if text.startswith("post turn=")
    ]
    assert post_contexts == [f"post turn={n} max={max_turns}" for n in (1, 3, 5)]


async def test_current_turn_reaches_but_never_passes_max_turns(governed):
    """The worst case: every call asks for a tool, every Stop rejects, until the hard cap."""
    hooks = governed({"Stop": [ALWAYS_TURN_STOP]}).hooks()
    client, agent = tool_agent(
        hooks, lambda messages: tool_call("Bash", {"command": "ls"}, f"c{len(messages)}"), 1
    )
    response = await hooks.run(agent, "go")
    await hooks.aclose()
    max_turns = (1 + 1) * (1 + STOP_REJECTION_CAP)
    assert len(client.requests) == max_turns
    marker = response.additional_properties["console_hooks"]
    assert marker["last_stop_reasons"] == [f"turn={max_turns} max={max_turns}"]


async def test_a_new_session_starts_counting_again(governed):
    hooks = governed({"Stop": [TURN_STOP]}).hooks()
    client, agent = agent_for(hooks, responder=lambda messages: say("answer"))
    await hooks.run(agent, "go")
    client.requests.clear()
    await hooks.run(agent, "again")
    await hooks.aclose()
    assert last_user_text(client.requests[1]).startswith("turn=1 ")
