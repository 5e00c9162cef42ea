"""PreToolUse: block, ask and approval hooks through the console resolver (live console)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from agent_framework import Agent, tool
from agent_hooks import InterceptionBlocked

from console import services as console_services
from console_client.scripted import ScriptedChatClient, message_texts, say, tool_call
from tests.e2e.live import start_console, stop_console

pytestmark = pytest.mark.asyncio

APPROVAL = {"type": "approval", "matcher": "restart_service", "expiresIn": 600}
BLOCK = {
    "type": "command",
    "matcher": "restart_service",
    "command": "echo 'not on prod' >&2; exit 2",
}
ASK = {
    "type": "command",
    "matcher": "restart_service",
    "command": 'echo \'{"decision": "ask", "reason": "prod restart"}\'',
}


@pytest.fixture
def reviewer_token(transactional_db):
    user = console_services.user_set_role(
        actor=None, username="rita", role="reviewer", password="pw"
    )
    return console_services.api_token_issue(actor=None, user=user, name="e2e").plaintext


def restart_agent(hooks, ran, service="api"):
    @tool(name="restart_service", description="Restart a service (simulated).")
    def restart_service(service: str) -> str:
        ran.append(service)
        return f"{service} restarted"

    client = ScriptedChatClient(
        [tool_call("restart_service", {"service": service}, "c1"), say("done")]
    )
    return client, Agent(
        client=client, name="sre", tools=[restart_service], middleware=[hooks.middleware()]
    )


async def decide_when_pending(url, token, outcome, reason="", args=None):
    """Act as the reviewer: wait for the escalation, then decide it over the API."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as client:
        for _ in range(100):
            items = (await client.get("/api/v1/escalations", params={"status": "pending"})).json()[
                "items"
            ]
            if items:
                body = {"outcome": outcome, "reason": reason}
                if args is not None:
                    body["args"] = args
                answer = await client.post(
                    f"/api/v1/escalations/{items[0]['id']}/decision", json=body
                )
                assert answer.status_code == 200, answer.text
                return items[0]
            await asyncio.sleep(0.1)
    raise AssertionError("no escalation appeared")


async def test_a_blocking_hook_stops_the_tool_and_the_model_sees_why(governed):
    hooks = governed({"PreToolUse": [BLOCK]}).hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    await hooks.run(agent, "restart api")
    await hooks.aclose()
    assert ran == []
    assert "not on prod" in message_texts(client.requests[1], role="tool")[0]


async def test_approval_approved_runs_the_tool(governed, reviewer_token):
    gov = governed({"PreToolUse": [APPROVAL]})
    hooks = gov.hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    run = asyncio.create_task(hooks.run(agent, "restart api"))
    item = await decide_when_pending(gov.console.url, reviewer_token, "approve", "fine")
    await run
    await hooks.aclose()
    assert ran == ["api"]
    assert item["tool_name"] == "restart_service"
    pre = next(r for r in hooks.last_records if r.interception_point.value == "pre_tool_call")
    assert pre.resolved_by == "approval"


async def test_approval_with_edited_arguments_runs_the_edited_call(governed, reviewer_token):
    gov = governed({"PreToolUse": [APPROVAL]})
    hooks = gov.hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran, service="api-prod")
    run = asyncio.create_task(hooks.run(agent, "restart api"))
    await decide_when_pending(
        gov.console.url, reviewer_token, "approve", "canary first", args={"service": "api-canary"}
    )
    await run
    await hooks.aclose()
    assert ran == ["api-canary"]


async def test_approval_rejected_skips_the_tool_and_the_model_gets_the_reason(
    governed, reviewer_token
):
    gov = governed({"PreToolUse": [APPROVAL]})
    hooks = gov.hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    run = asyncio.create_task(hooks.run(agent, "restart api"))
    await decide_when_pending(gov.console.url, reviewer_token, "reject", "wait for the window")
    response = await run
    await hooks.aclose()
    assert ran == []
    assert response.text == "done"  # the agent went on
    seen = json.loads(message_texts(client.requests[1], role="tool")[0])
    assert seen["reason"] == "reviewer_rejected"
    assert seen["message"] == "wait for the window"


async def test_a_hook_answering_ask_escalates(governed, reviewer_token):
    gov = governed({"PreToolUse": [ASK]})
    hooks = gov.hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    run = asyncio.create_task(hooks.run(agent, "restart api"))
    await decide_when_pending(gov.console.url, reviewer_token, "approve")
    await run
    await hooks.aclose()
    assert ran == ["api"]


async def test_an_ask_and_a_custom_agents_approval_hook_need_the_approval_hooks_quorum(
    governed, reviewer_token
):
    # run_all: both deny, and the SDK hands the resolver the first (the agent-level ask). The
    # console still applies the approval hook that matches the call: two approvals.
    gov = governed(
        {"PreToolUse": [ASK]},
        custom={"ops": {"PreToolUse": [{**APPROVAL, "approvalsRequired": 2}]}},
    )
    hooks = gov.hooks("ops")
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    run = asyncio.create_task(hooks.run(agent, "restart api"))
    item = await decide_when_pending(gov.console.url, reviewer_token, "approve")
    assert item["approvals_required"] == 2
    assert item["custom_agent"] == "ops"
    await asyncio.sleep(0.5)
    assert not run.done() and ran == []  # one approval of two: still waiting
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await hooks.aclose()


async def test_approval_expired_skips_the_tool(governed):
    gov = governed({"PreToolUse": [{**APPROVAL, "expiresIn": 1}]})
    hooks = gov.hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    await asyncio.wait_for(hooks.run(agent, "restart api"), timeout=30)
    await hooks.aclose()
    assert ran == []
    seen = json.loads(message_texts(client.requests[1], role="tool")[0])
    assert seen["reason"] == "approval_expired"


async def test_console_down_means_the_escalated_tool_does_not_run(governed, tmp_path):
    """Posture `continue`: the call is refused, the model reads why, the run goes on."""
    gov = governed({"PreToolUse": [APPROVAL]})
    own = start_console(tmp_path / "own-console.log")
    try:
        gov.console = own
        hooks = gov.hooks()
    finally:
        stop_console(own)
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    response = await asyncio.wait_for(hooks.run(agent, "restart api"), timeout=30)
    await hooks.aclose()
    assert ran == []
    assert response.text == "done"
    seen = json.loads(message_texts(client.requests[1], role="tool")[0])
    assert seen == {
        "error": "Tool call blocked by agent-hooks at pre_tool_call.",
        "reason": "host_error:approval_resolver_failed",
        **({"message": seen["message"]} if "message" in seen else {}),
    }
    pre = next(r for r in hooks.last_records if r.interception_point.value == "pre_tool_call")
    assert pre.verdict.reason == "host_error:approval_resolver_failed"


async def test_evaluate_only_never_blocks_and_never_asks_reviewers(governed, reviewer_token):
    gov = governed({"PreToolUse": [BLOCK, APPROVAL]}, mode="evaluate_only")
    hooks = gov.hooks()
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    await asyncio.wait_for(hooks.run(agent, "restart api"), timeout=20)
    await hooks.aclose()
    assert ran == ["api"]
    async with httpx.AsyncClient(
        base_url=gov.console.url, headers={"Authorization": f"Bearer {reviewer_token}"}
    ) as client_http:
        listed = (await client_http.get("/api/v1/escalations", params={"status": "all"})).json()
    assert listed["items"] == []
    pre = next(r for r in hooks.last_records if r.interception_point.value == "pre_tool_call")
    assert pre.mode.value == "evaluate_only"
    assert pre.verdict.decision.value == "deny"


async def test_a_catastrophic_matcher_does_not_freeze_the_agent(governed):
    """An admin's `(a+)+` against a tool name the model chose: with a backtracking engine
    this evaluation holds the interpreter lock for seconds at every tool call."""
    name = "a" * 30 + "b"  # Python's `re`: about a minute
    hook = {"type": "command", "matcher": "(a+)+", "command": "echo matched >&2; exit 2"}
    hooks = governed({"PreToolUse": [hook]}).hooks()
    ran: list[str] = []

    @tool(name=name, description="A tool with a long name.")
    def long_named() -> str:
        ran.append(name)
        return "ok"

    client = ScriptedChatClient([tool_call(name, {}, "c1"), say("done")])
    agent = Agent(client=client, name="sre", tools=[long_named], middleware=[hooks.middleware()])
    widest = 0.0

    async def tick():
        nonlocal widest
        last = asyncio.get_running_loop().time()
        while True:
            await asyncio.sleep(0.01)
            now = asyncio.get_running_loop().time()
            widest, last = max(widest, now - last), now

    ticker = asyncio.create_task(tick())
    try:
        await asyncio.wait_for(hooks.run(agent, "go"), timeout=10)
    finally:
        ticker.cancel()
    await hooks.aclose()
    assert ran == [name]  # the matcher does not match: the tool ran
    assert widest < 3.0  # room for a loaded machine; the backtracking stall is far longer


# AGENT-HOOKS §13.1 outcome of a host error at the tool seam, by posture.
RUN_OUTCOME_BY_POSTURE = {"continue": "completed", "terminate": "blocked"}


async def test_a_host_error_at_a_tool_call_does_what_the_declared_posture_says(governed, tmp_path):
    """The resolver fails (the console went away after the declaration was loaded): a
    `host_error:*` deny at pre_tool_call. The run's outcome must be the one the console's
    declaration states in `configuration.posture.tool_seam_host_error`."""
    gov = governed({"PreToolUse": [APPROVAL]})
    own = start_console(tmp_path / "own-console.log")
    try:
        gov.console = own
        hooks = gov.hooks()
    finally:
        stop_console(own)
    posture = hooks.declaration.document["configuration"]["posture"]["tool_seam_host_error"]
    ran: list[str] = []
    client, agent = restart_agent(hooks, ran)
    try:
        await asyncio.wait_for(hooks.run(agent, "restart api"), timeout=30)
        outcome = "completed"
    except InterceptionBlocked:
        outcome = "blocked"
    await hooks.aclose()
    pre = next(r for r in hooks.last_records if r.interception_point.value == "pre_tool_call")
    assert pre.verdict.reason == "host_error:approval_resolver_failed"
    assert ran == []  # fail closed under either posture
    assert outcome == RUN_OUTCOME_BY_POSTURE[posture]
    # `continue` would show the model the blocked call and ask it again; `terminate` does not.
    assert len(client.requests) == (2 if posture == "continue" else 1)
