"""Approval faults: a real agent_framework Agent governed by `ConsoleHooks` calls a tool that
a PreToolUse approval hook escalates; a reviewer decides through the API.

- push lost (Redis killed while the agent's long-poll waits): every decision still reaches
  the agent within one long-poll period (the long-poll re-reads PostgreSQL);
- console unreachable (stopped before the call, or while the long-poll waits): the call
  fails closed, the tool does not run.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from agent_framework import Agent, tool
from agent_hooks import InterceptionBlocked

from bench.faults.rig import Rig
from console_client import ConsoleHooks
from console_client.scripted import ScriptedChatClient, say, tool_call

TOOL = "restart_service"
REVIEW_POLL = 0.1


@dataclass
class ToolLog:
    ran_at: list[float] = field(default_factory=list)


def governed_agent(hooks: ConsoleHooks, log: ToolLog, service: str) -> Agent:
    @tool(name=TOOL, description="Restart a systemd service (simulated).")
    def restart_service(service: str) -> str:
        log.ran_at.append(time.monotonic())
        return f"{service}.service restarted"

    client = ScriptedChatClient(
        [tool_call(TOOL, {"service": service}, "call-1"), say("Restarted.")]
    )
    return Agent(client=client, name="faults", tools=[restart_service],
                 middleware=[hooks.middleware()])  # fmt: skip


def _reviewer(rig: Rig) -> httpx.Client:
    headers = {"Authorization": f"Bearer {rig.provisioned.reviewer_token}"}
    return httpx.Client(base_url=rig.console.url, headers=headers, timeout=10)


def wait_pending(rig: Rig, service: str, timeout: float = 30) -> str:
    """The id of the pending escalation whose call restarts `service` (unique per call)."""
    deadline = time.monotonic() + timeout
    with _reviewer(rig) as client:
        while time.monotonic() < deadline:
            answer = client.get("/api/v1/escalations", params={"status": "pending"})
            if answer.status_code == 200:
                for item in answer.json()["items"]:
                    if (item.get("arguments") or {}).get("service") == service:
                        return str(item["id"])
            time.sleep(REVIEW_POLL)
    raise RuntimeError(f"no pending escalation for {service} appeared")


def decide(rig: Rig, escalation_id: str, outcome: str = "approve") -> float:
    """POST the decision; returns the monotonic time of its 200."""
    with _reviewer(rig) as client:
        answer = client.post(
            f"/api/v1/escalations/{escalation_id}/decision",
            json={"outcome": outcome, "reason": "fault run"},
        )
    if answer.status_code != 200:
        raise RuntimeError(f"decision answered {answer.status_code}: {answer.text[:300]}")
    return time.monotonic()


@dataclass
class DeliveryResult:
    name: str
    long_poll_seconds: int
    latencies: list[float]
    tool_runs: int
    escalations: int

    @property
    def ok(self) -> bool:
        return (
            self.tool_runs == self.escalations
            and len(self.latencies) == self.escalations
            and max(self.latencies) <= self.long_poll_seconds
        )

    def report(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        lat = sorted(self.latencies)
        figures = (
            f"p50={statistics.median(lat):.2f}s max={lat[-1]:.2f}s"
            if lat
            else "no decisions arrived"
        )
        return (
            f"[{verdict}] {self.name}: {len(lat)}/{self.escalations} decisions reached the agent, "
            f"tool ran {self.tool_runs}x, decision->tool {figures} "
            f"(long-poll period {self.long_poll_seconds}s)"
        )


async def decisions_reach_agent(
    rig: Rig,
    *,
    name: str,
    escalations: int = 5,
    long_poll_seconds: int = 30,
    kill_redis: bool = True,
) -> DeliveryResult:
    """Each escalation: the agent waits on its long-poll; (Redis is killed); a reviewer
    approves; time until the tool runs. Redis is started again at the end."""
    hooks = ConsoleHooks(rig.console.url, rig.agent_token, long_poll_seconds=long_poll_seconds,
                         **rig.client_dirs())  # fmt: skip
    log = ToolLog()
    latencies: list[float] = []
    run = uuid.uuid4().hex[:8]
    try:
        for call in range(escalations):
            service = f"api-{run}-{call}"
            agent = governed_agent(hooks, log, service)
            running = asyncio.create_task(hooks.run(agent, f"restart {service}"))
            escalation_id = await asyncio.to_thread(wait_pending, rig, service)
            await asyncio.sleep(0.5)  # the agent's long-poll is waiting on the push
            if kill_redis and call == 0:
                rig.redis.kill()
            runs_before = len(log.ran_at)
            decided_at = await asyncio.to_thread(decide, rig, escalation_id)
            await asyncio.wait_for(running, timeout=long_poll_seconds + 30)
            if len(log.ran_at) > runs_before:
                latencies.append(log.ran_at[-1] - decided_at)
    finally:
        await hooks.aclose()
        if kill_redis:
            await asyncio.to_thread(rig.redis.start)
    return DeliveryResult(name, long_poll_seconds, latencies, len(log.ran_at), escalations)


@dataclass
class FailClosedResult:
    name: str
    tool_ran: bool
    decision: str
    reason: str
    seconds: float
    outcome: str

    @property
    def ok(self) -> bool:
        return not self.tool_ran and self.decision == "deny"

    def report(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        return (
            f"[{verdict}] {self.name}: tool ran={self.tool_ran}, pre_tool_call verdict "
            f"{self.decision} ({self.reason}), {self.outcome} after {self.seconds:.2f}s"
        )


async def unreachable_fails_closed(rig: Rig, *, when: str = "before") -> FailClosedResult:
    """`when`: "before" (console stopped before the call) or "waiting" (stopped while the
    agent's long-poll waits). The console is started again at the end."""
    hooks = ConsoleHooks(rig.console.url, rig.agent_token, long_poll_seconds=10,
                         **rig.client_dirs())  # fmt: skip
    log = ToolLog()
    try:
        service = f"api-{uuid.uuid4().hex[:8]}"
        agent = governed_agent(hooks, log, service)
        if when == "before":
            rig.console.stop()
        started = time.monotonic()
        running = asyncio.create_task(hooks.run(agent, "restart api"))
        if when == "waiting":
            await asyncio.to_thread(wait_pending, rig, service)
            await asyncio.sleep(0.5)
            rig.console.stop()
        outcome = "the run completed"
        try:
            await asyncio.wait_for(running, timeout=60)
        except InterceptionBlocked:
            # Posture `terminate` would end the run on this host failure (the resolver could
            # not reach the console); the console declares `continue`, so the run completes.
            outcome = "the run stopped with InterceptionBlocked"
        seconds = time.monotonic() - started
        pre = [r for r in hooks.last_records if r.interception_point.value == "pre_tool_call"]
        verdict: Any = pre[0].verdict if pre else None
    finally:
        await hooks.aclose()
        if rig.console.process is None or rig.console.process.poll() is not None:
            await asyncio.to_thread(rig.console.start)
    return FailClosedResult(
        name=f"console unreachable ({when} the call)",
        tool_ran=bool(log.ran_at),
        decision=verdict.decision.value if verdict is not None else "none",
        reason=str(verdict.reason) if verdict is not None else "",
        seconds=seconds,
        outcome=outcome,
    )


async def decision_across_pg_restart(rig: Rig, *, escalations: int = 3) -> DeliveryResult:
    """The agent's long-poll waits; PostgreSQL restarts with `-m immediate`; the reviewer
    decides right after: the decision is taken (no 500 on a dead pooled session) and
    reaches the agent within one long-poll period."""
    assert rig.cluster is not None, "needs the private cluster"
    long_poll = 30
    hooks = ConsoleHooks(rig.console.url, rig.agent_token, long_poll_seconds=long_poll,
                         **rig.client_dirs())  # fmt: skip
    log = ToolLog()
    latencies: list[float] = []
    run = uuid.uuid4().hex[:8]
    try:
        for call in range(escalations):
            service = f"api-{run}-{call}"
            running = asyncio.create_task(
                hooks.run(governed_agent(hooks, log, service), f"restart {service}")
            )
            escalation_id = await asyncio.to_thread(wait_pending, rig, service)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(rig.cluster.restart_immediate)
            runs_before = len(log.ran_at)
            decided_at = await asyncio.to_thread(decide, rig, escalation_id)
            await asyncio.wait_for(running, timeout=long_poll + 30)
            if len(log.ran_at) > runs_before:
                latencies.append(log.ran_at[-1] - decided_at)
    finally:
        await hooks.aclose()
    return DeliveryResult("PostgreSQL restarted while the agent waits", long_poll, latencies,
                          len(log.ran_at), escalations)  # fmt: skip
