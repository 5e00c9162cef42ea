"""Recorded reasons end to end: a real agent, real command hooks and a live console. A hook
an admin opted in to "record its reason" has its own words stored with the record; a hook
that did not has none, and neither does any record of the run."""

from __future__ import annotations

import pytest
from agent_framework import Agent, tool
from asgiref.sync import sync_to_async

from audit.models import InterceptionRecord
from console_client.scripted import ScriptedChatClient, say, tool_call

pytestmark = pytest.mark.asyncio


def blocker(name: str, matcher: str, words: str, *, record_reason: bool) -> dict:
    hook = {
        "name": name,
        "type": "command",
        "matcher": matcher,
        "command": f"echo '{words}' >&2; exit 2",
    }
    if record_reason:
        hook["recordReason"] = True
    return hook


def two_tool_agent(hooks, ran):
    @tool(name="restart_service", description="Restart a service (simulated).")
    def restart_service(service: str) -> str:
        ran.append(service)
        return f"{service} restarted"

    @tool(name="drop_table", description="Drop a table (simulated).")
    def drop_table(table: str) -> str:
        ran.append(table)
        return f"{table} dropped"

    client = ScriptedChatClient(
        [
            tool_call("restart_service", {"service": "api-secret-7"}, "c1"),
            tool_call("drop_table", {"table": "customers-secret-9"}, "c2"),
            say("done"),
        ]
    )
    agent = Agent(
        client=client,
        name="sre",
        tools=[restart_service, drop_table],
        middleware=[hooks.middleware()],
    )
    return client, agent


def _stored(agent_id: int) -> list[InterceptionRecord]:
    return list(InterceptionRecord.objects.filter(agent_id=agent_id).order_by("sequence"))


async def test_only_the_opted_in_hook_has_its_reason_recorded(governed):
    gov = governed(
        {
            "PreToolUse": [
                blocker(
                    "restart guard",
                    "restart_service",
                    "restarts wait for Monday",
                    record_reason=True,
                ),
                blocker(
                    "table guard", "drop_table", "tables are never dropped", record_reason=False
                ),
            ]
        }
    )
    hooks = gov.hooks()
    ran: list[str] = []
    _client, agent = two_tool_agent(hooks, ran)
    await hooks.run(agent, "restart api, then drop the table")
    await hooks.aclose()
    assert ran == []  # both calls were blocked by their hook

    records = await sync_to_async(_stored)(gov.agent.pk)
    keys = {
        hook.name: hook.key
        for hook in await sync_to_async(list)(gov.agent.hooks.all())  # type: ignore[attr-defined]
    }
    denied = {r.decided_hook: r for r in records if r.outcome == "denied"}
    assert set(denied) == {keys["restart guard"], keys["table guard"]}

    opted_in = denied[keys["restart guard"]]
    assert opted_in.raw["verdict"]["message"] == "restarts wait for Monday"
    assert opted_in.recorded_reasons == [(keys["restart guard"], "restarts wait for Monday")]

    not_opted_in = denied[keys["table guard"]]
    assert "message" not in not_opted_in.raw["verdict"]
    assert not_opted_in.recorded_reasons == []
    # No record of the run holds the other hook's words (nor any argument).
    stored = " ".join(str(r.raw) for r in records)
    assert "tables are never dropped" not in stored
    assert "secret" not in stored


async def test_a_hook_not_opted_in_records_no_reason(governed):
    gov = governed(
        {"PreToolUse": [blocker("guard", "restart_service", "not today", record_reason=False)]}
    )
    hooks = gov.hooks()
    _client, agent = two_tool_agent(hooks, [])
    await hooks.run(agent, "restart api")
    await hooks.aclose()
    records = await sync_to_async(_stored)(gov.agent.pk)
    assert [r.outcome for r in records].count("denied") == 1
    assert all("not today" not in str(r.raw) for r in records)
    assert all(r.recorded_reasons == [] for r in records)


async def test_a_stop_rejection_of_an_opted_in_hook_keeps_its_reason_and_not_the_others(governed):
    """Stop rejections are warnings (the agent continues): each warning's words belong to the
    hook whose own verdict carries the warning's reason, so only the opted-in one is kept."""
    rejecting = (
        "#!/bin/bash\nCONTEXT=$(cat)\n"
        "COUNT=$(echo \"$CONTEXT\" | jq -r '.stop_rejection_count')\n"
        'if [ "$COUNT" -lt 1 ]; then echo "WORDS" >&2; exit 2; fi\nexit 0\n'
    )
    gov = governed(
        {
            "Stop": [
                {"name": "quiet", "type": "command", "script": rejecting.replace("WORDS", "hush")},
                {
                    "name": "marker",
                    "type": "command",
                    "script": rejecting.replace("WORDS", "say Task complete"),
                    "recordReason": True,
                },
            ]
        }
    )
    hooks = gov.hooks()
    client = ScriptedChatClient([say("Restarted api."), say("Restarted api. Task complete.")])
    agent = Agent(client=client, name="sre", middleware=[hooks.middleware()])
    await hooks.run(agent, "fix api")
    await hooks.aclose()
    records = await sync_to_async(_stored)(gov.agent.pk)
    marker = await sync_to_async(lambda: gov.agent.hooks.get(name="marker").key)()
    warned = [r for r in records if r.outcome == "warned"]
    assert len(warned) == 1
    assert warned[0].recorded_reasons == [(marker, "say Task complete")]
    assert [w.get("message") for w in warned[0].raw["verdict"]["warnings"]] == [
        None,
        "say Task complete",
    ]
    assert "hush" not in " ".join(str(r.raw) for r in records)
