"""Stop semantics: rejection loops, the context flags, maxRejections and the hard cap."""

from __future__ import annotations

import json

import pytest
import yaml
from agent_framework import Agent

from agents.demo_documents import COMPLETION_MARKER_STOP_HOOK_YAML
from console_client.client import STOP_REJECTION_CAP
from console_client.scripted import ScriptedChatClient, message_texts, say
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
