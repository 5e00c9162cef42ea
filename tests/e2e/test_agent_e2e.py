"""End to end: a real agent_framework.Agent, a scripted model, a live console on
PostgreSQL; records arrive payload-free, escalations carry the SDK wire."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
import yaml
from agent_framework import Agent, tool

from approvals.models import Escalation
from audit.models import InterceptionRecord
from console_client.scripted import ScriptedChatClient, message_texts, say, tool_call
from demo.documents import AUDIT_ALL_TOOLS_HOOK_YAML, SEED_CUSTOM_AGENT_YAML

pytestmark = pytest.mark.asyncio

AUDIT = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]["PostToolUse"][0]
DANGEROUS = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)["spec"]["hooks"]["PostToolUse"][0]


def bash_tool(ran):
    @tool(name="Bash", description="Run a shell command (simulated).")
    def bash(command: str) -> str:
        ran.append(command)
        return f"OUTPUT-OF {command}"

    return bash


async def test_records_arrive_without_any_trace_of_the_payload(governed):
    marker = f"MARKER-{uuid.uuid4().hex}"
    gov = governed(
        {
            "PostToolUse": [AUDIT],
            "PreToolUse": [{"type": "command", "matcher": "*", "command": "exit 0"}],
        },
        custom={"my_hooked_agent": {"PostToolUse": [DANGEROUS]}},
    )
    hooks = gov.hooks("my_hooked_agent")
    client = ScriptedChatClient(
        [
            tool_call("Bash", {"command": f"echo {marker}"}, "c1"),
            tool_call("Bash", {"command": f"rm -rf /srv/{marker}"}, "c2"),
            say(f"finished {marker}"),
        ]
    )
    agent = Agent(client=client, name="sre", tools=[bash_tool([])], middleware=[hooks.middleware()])
    await hooks.run(agent, f"please run {marker}")
    await hooks.aclose()
    assert hooks.records.spooled == 0
    session_id = hooks.last_records[0].session_id
    rows = await asyncio.to_thread(
        lambda: list(InterceptionRecord.objects.filter(session_id=session_id).order_by("sequence"))
    )
    assert [row.sequence for row in rows] == [r.sequence for r in hooks.last_records]
    points = [row.interception_point for row in rows]
    assert points[0] == "agent_startup" and points[-1] == "agent_shutdown"
    assert {row.custom_agent for row in rows} == {"my_hooked_agent"}
    assert {row.tool_name for row in rows if row.interception_point.endswith("tool_call")} == {
        "Bash"
    }
    denied = [row for row in rows if row.decision == "deny"]
    assert [row.interception_point for row in denied] == ["post_tool_call"]
    for row in rows:
        dumped = json.dumps(row.raw) + row.reason + row.tool_name + row.custom_agent
        assert marker not in dumped


async def test_the_escalation_carries_the_request_and_its_meta(governed):
    approval = {"type": "approval", "matcher": "Bash", "expiresIn": 1}
    gov = governed({"PreToolUse": [approval]})
    hooks = gov.hooks()
    client = ScriptedChatClient([tool_call("Bash", {"command": "uptime"}, "c1"), say("ok")])
    agent = Agent(client=client, name="sre", tools=[bash_tool([])], middleware=[hooks.middleware()])
    await asyncio.wait_for(hooks.run(agent, "how long up?"), timeout=30)
    await hooks.aclose()
    escalation = await asyncio.to_thread(lambda: Escalation.objects.get())
    hook_key = await asyncio.to_thread(lambda: gov.agent.hooks.get().key)
    pre = next(r for r in hooks.last_records if r.interception_point.value == "pre_tool_call")
    assert escalation.hook_key == hook_key
    assert escalation.tool_name == "Bash"
    assert escalation.session_id == pre.session_id
    assert escalation.framework == "agent-framework"
    assert escalation.revision == gov.agent.revision
    assert escalation.context_identity == pre.input_identity
    assert escalation.arguments == {"command": "uptime"}
    assert escalation.tool_schema["properties"]["command"]["type"] == "string"
    assert "how long up?" in escalation.transcript
    assert json.loads(message_texts(client.requests[1], role="tool")[0])["reason"] == (
        "approval_expired"
    )
