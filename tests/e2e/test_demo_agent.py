"""The demo agent of `make run` produces governed traffic against a live console."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from approvals.models import Escalation
from audit.models import InterceptionRecord
from console import services as console_services
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    DEMO_APPROVAL_HOOK,
)
from demo.management.commands.run_demo_agent import load_demo
from tests.console_client.test_pre_tool_use import decide_when_pending

pytestmark = pytest.mark.asyncio


async def test_demo_loop_runs_its_tasks_under_the_seed_hooks(governed):
    hooks = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]
    hooks.update(yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"])
    hooks["PreToolUse"] = [DEMO_APPROVAL_HOOK]
    gov = governed(hooks)
    reviewer = console_services.user_set_role(
        actor=None, username="rita", role="reviewer", password="pw"
    )
    token = console_services.api_token_issue(actor=None, user=reviewer).plaintext
    demo = load_demo()
    loop = asyncio.create_task(demo.demo(gov.console.url, gov.token, pace=0.05, runs=4))
    await decide_when_pending(gov.console.url, token, "approve", "go ahead")
    await asyncio.wait_for(loop, timeout=60)
    rows = await asyncio.to_thread(
        lambda: list(InterceptionRecord.objects.order_by("timestamp", "sequence"))
    )
    sessions: dict[str, list[str]] = {}
    for row in rows:
        sessions.setdefault(row.session_id, []).append(
            f"{row.agent_id}:{row.interception_point}:{row.tool_name}:{row.outcome}"
        )
    # Four routine tasks and one change, all the demo agent's (a failure lists each
    # session's records: agent id, point, tool, outcome).
    assert len(sessions) == 5, sessions
    assert {row.agent_id for row in rows} == {gov.agent.pk}
    assert {row.tool_name for row in rows} >= {"Bash", "restart_service", "read_logs"}
    warned = [row for row in rows if row.interception_point == "output" and row.outcome == "warned"]
    assert warned  # the Stop hook made the agent add the completion marker at least once
    escalation = await asyncio.to_thread(lambda: Escalation.objects.get())
    assert escalation.status == "approved"
