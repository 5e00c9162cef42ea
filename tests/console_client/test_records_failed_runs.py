"""Records of failed runs reach the console: every path of the SDK emitter, through the
real host (ConsoleHooks) and the real record sink, against a live console."""

from __future__ import annotations

import asyncio

import pytest
from agent_framework import Agent, tool

from audit.models import InterceptionRecord
from console_client.scripted import ScriptedChatClient, say, tool_call

pytestmark = pytest.mark.asyncio

APPROVAL = {"type": "approval", "matcher": "restart_service", "expiresIn": 600}


def restart_agent(hooks, ran):
    @tool(name="restart_service", description="Restart a service (simulated).")
    def restart_service(service: str) -> str:
        ran.append(service)
        return f"{service} restarted"

    client = ScriptedChatClient([tool_call("restart_service", {"service": "api"}, "c1"), say("done")])
    return Agent(client=client, name="sre", tools=[restart_service], middleware=[hooks.middleware()])


async def test_a_run_cancelled_while_a_reviewer_is_awaited_is_recorded(governed):
    gov = governed({"PreToolUse": [APPROVAL]})
    hooks = gov.hooks()
    ran: list[str] = []
    agent = restart_agent(hooks, ran)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(hooks.run(agent, "restart api"), timeout=1.5)
    await hooks.aclose()
    print([r.to_wire() for r in hooks.last_records])
    print(hooks.records.refused, hooks.records.delivered)
    stored = list(InterceptionRecord.objects.order_by("sequence").values_list("interception_point", "outcome", "reason"))
    print(stored)
    assert hooks.records.refused == 0
