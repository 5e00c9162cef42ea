"""Records of failed runs reach the console: the real host (ConsoleHooks built from the
console's declaration) and its record sink against a live console. A cancelled run, a
failing hook and a refused batch each leave their trace: stored records, or a dead letter
the agent's page shows."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from agent_framework import Agent, tool
from agent_hooks import AgentContextBuilder, InterceptionBlocked, InterceptionEmitter, Verdict
from django.test import Client

from audit.models import DeadLetterReport, InterceptionRecord
from console import services as console_services
from console_client.results import HookResult
from console_client.scripted import ScriptedChatClient, say, tool_call
from tests.approvals.conftest import in_own_thread

pytestmark = pytest.mark.asyncio

APPROVAL = {"type": "approval", "matcher": "restart_service", "expiresIn": 600}
COMMAND = {"type": "command", "matcher": "restart_service", "command": "exit 0"}


def restart_agent(hooks: Any, ran: list[str]) -> Agent:
    @tool(name="restart_service", description="Restart a service (simulated).")
    def restart_service(service: str) -> str:
        ran.append(service)
        return f"{service} restarted"

    client = ScriptedChatClient(
        [tool_call("restart_service", {"service": "api"}, "c1"), say("done")]
    )
    return Agent(
        client=client, name="sre", tools=[restart_service], middleware=[hooks.middleware()]
    )


async def stored(session_id: str) -> list[InterceptionRecord]:
    return await asyncio.to_thread(
        in_own_thread(
            lambda: list(
                InterceptionRecord.objects.filter(session_id=session_id).order_by("sequence")
            )
        )
    )


def assert_all_stored(hooks: Any, rows: list[InterceptionRecord]) -> None:
    assert [row.sequence for row in rows] == [r.sequence for r in hooks.last_records]
    assert [row.outcome for row in rows if row.outcome == "host_error"]
    assert hooks.records.dead_lettered == 0 and hooks.records.spooled == 0
    assert not hooks.records.dead_letter_file.exists()


async def test_a_run_cancelled_while_a_reviewer_is_awaited_is_recorded(governed):
    hooks = governed({"PreToolUse": [APPROVAL]}).hooks()
    ran: list[str] = []
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(hooks.run(restart_agent(hooks, ran), "restart api"), timeout=2)
    await hooks.aclose()
    assert ran == []
    rows = await stored(hooks.last_records[0].session_id)
    assert_all_stored(hooks, rows)
    pre = next(row for row in rows if row.interception_point == "pre_tool_call")
    assert (pre.outcome, pre.decision, pre.reason) == (
        "host_error",
        "deny",
        "host_error:interceptor_failed",
    )
    assert (pre.decided_by, pre.decided_hook, pre.hook_ids) == (None, "", [])
    assert pre.tool_name == "restart_service" and "verdicts" not in pre.raw
    assert rows[-1].interception_point == "agent_shutdown"


async def test_a_run_cancelled_while_a_hook_runs_is_recorded(governed):
    async def slow(hook: dict[str, Any], context: dict[str, Any], **_: Any) -> HookResult:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    hooks = governed({"PreToolUse": [COMMAND]}).hooks(command_runner=slow)
    ran: list[str] = []
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(hooks.run(restart_agent(hooks, ran), "restart api"), timeout=2)
    await hooks.aclose()
    rows = await stored(hooks.last_records[0].session_id)
    assert_all_stored(hooks, rows)
    pre = next(row for row in rows if row.interception_point == "pre_tool_call")
    assert (pre.outcome, pre.reason) == ("host_error", "host_error:interceptor_failed")


async def test_a_failing_hook_is_recorded_as_a_host_error(governed):
    async def crash(hook: dict[str, Any], context: dict[str, Any], **_: Any) -> HookResult:
        raise RuntimeError("the runner broke")

    gov = governed({"PreToolUse": [COMMAND]})
    hooks = gov.hooks(command_runner=crash)
    ran: list[str] = []
    # Whether a tool-seam host error stops the run or the model goes on (the declared
    # posture), the record of it must arrive.
    with contextlib.suppress(InterceptionBlocked):
        await hooks.run(restart_agent(hooks, ran), "restart api")
    await hooks.aclose()
    assert ran == []
    rows = await stored(hooks.last_records[0].session_id)
    assert_all_stored(hooks, rows)
    pre = next(row for row in rows if row.interception_point == "pre_tool_call")
    [hook] = await asyncio.to_thread(in_own_thread(lambda: list(gov.agent.hooks.all())))
    assert (pre.outcome, pre.reason, pre.decided_hook) == (
        "host_error",
        "host_error:interceptor_failed",
        hook.key,
    )


class _Allow:
    def intercept(self, context: dict[str, Any]) -> Verdict:
        return Verdict.allow()


async def test_a_refused_batch_is_dead_lettered_and_shown_on_the_agents_page(governed):
    gov = governed({"PreToolUse": [COMMAND]})
    hooks = gov.hooks()
    # A record the SDK emits and the console refuses: a session id over 200 characters.
    emitter = InterceptionEmitter()
    emitter.register(_Allow(), name="console-base")
    emitter.set_record_sink(lambda record: hooks.records.submit(record, {"tool_name": "x"}))
    builder = AgentContextBuilder(agent_id="sre-agent", framework="f", session_id="s" * 300)
    await emitter.emit_unchecked(builder.input(content="hello"))
    await emitter.emit_unchecked(builder.output(content="done"))
    await hooks.aclose()

    sink = hooks.records
    assert sink.dead_lettered == 2 and sink.delivered == 0 and sink.spooled == 0
    lines = sink.dead_letter_file.read_text().splitlines()
    assert len(lines) == 2 and '"status":400' in lines[0] and "/0/record/session_id" in lines[0]
    [report] = await asyncio.to_thread(in_own_thread(lambda: list(DeadLetterReport.objects.all())))
    assert (report.agent_id, report.records, report.status) == (gov.agent.pk, 2, 400)
    assert "must be at most 200 characters" in report.error

    def agent_page() -> str:
        admin = console_services.user_set_role(
            actor=None, username="alice", role="admin", password="pw"
        )
        client = Client()
        client.force_login(admin)
        return client.get(f"/agents/{gov.agent.slug}/").content.decode()

    html = await asyncio.to_thread(in_own_thread(agent_page))
    assert "2 interception records refused by the console" in html
    assert "must be at most 200 characters" in html
