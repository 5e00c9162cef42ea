"""Mixed load on the console (run by bench/load/run.py, which starts the stack and passes
tokens through the environment):

- RecordsAgent: `POST /api/v1/records`, batches of 100-500 real SDK records (a session made
  once by the SDK emitter, re-keyed with a fresh session id per batch);
- EscalatingAgent: `POST /api/v1/escalations` with a real approval request, then
  long-polls `GET /api/v1/escalations/{id}?wait=20` until a reviewer decides;
- Reviewer: lists pending escalations with a personal token and approves them (a 409
  when another reviewer got there first is the contract, not an error);
- InboxSocket: a reviewer's `/ws/approvals/?view=inbox` websocket held open, counting
  the frames pushed to it.

Any 5xx or unexpected status is a failure in locust's statistics.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from typing import Any

import websocket
from agent_hooks import AgentContextBuilder, InterceptionEmitter, Verdict
from agent_hooks.canonical import context_identity
from locust import HttpUser, User, between, constant_pacing, events, task

from console_client.records import record_item

AGENT_TOKEN = os.environ.get("LOAD_AGENT_TOKEN", "")
REVIEWER_TOKEN = os.environ.get("LOAD_REVIEWER_TOKEN", "")
SESSIONS = [s for s in os.environ.get("LOAD_SESSIONS", "").split(",") if s]
LONG_POLL = int(os.environ.get("LOAD_LONG_POLL", "20"))
PLACEHOLDER = "0" * 32


def _session_records(count: int = 500) -> list[dict[str, Any]]:
    """`count` record items of one session, as console_client's sink ships them."""

    class Audit:
        def intercept(self, context: Any) -> Verdict:
            return Verdict.allow()

    emitter = InterceptionEmitter()
    emitter.register(Audit(), name="PostToolUse/audit")
    builder = AgentContextBuilder(
        agent_id="faults-agent", framework="agent-framework", session_id=PLACEHOLDER
    )

    async def emit() -> None:
        await emitter.emit_unchecked(builder.agent_startup(tools_registered=["Bash"]))
        for index in range(count - 1):
            await emitter.emit_unchecked(
                builder.pre_tool_call(call_id=f"c{index}", name="Bash", args={"command": "df"})
            )

    asyncio.run(emit())
    meta = {"framework": "agent-framework", "tool_name": "Bash"}
    return [record_item(record, meta) for record in emitter.results]


BATCH_TEMPLATES = {
    size: json.dumps(_session_records()[:size], separators=(",", ":")) for size in (100, 250, 500)
}


def approval_request() -> dict[str, Any]:
    builder = AgentContextBuilder(
        agent_id="faults-agent", framework="agent-framework", session_id=uuid.uuid4().hex
    )
    builder.agent_startup(tools_registered=["restart_service"])
    context = dict(
        builder.pre_tool_call(call_id="call-1", name="restart_service", args={"service": "api"})
    )
    verdict = Verdict.escalate(reason="approval_required", message="needs approval")
    return {
        "context_identity": context_identity(context),
        "interception_point": "pre_tool_call",
        "verdict": verdict.to_wire(),
        "context": context,
    }


class RecordsAgent(HttpUser):
    fixed_count = int(os.environ.get("LOAD_RECORD_USERS", "3"))
    wait_time = constant_pacing(1.0)

    def on_start(self) -> None:
        self.client.headers.update(
            {"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"}
        )
        self.sizes = list(BATCH_TEMPLATES)
        self.turn = 0

    @task
    def ingest(self) -> None:
        size = self.sizes[self.turn % len(self.sizes)]
        self.turn += 1
        body = BATCH_TEMPLATES[size].replace(PLACEHOLDER, uuid.uuid4().hex)
        with self.client.post(
            "/api/v1/records", data=body, name=f"records x{size}", catch_response=True
        ) as response:
            if response.status_code != 202 or response.json().get("accepted") != size:
                response.failure(f"{response.status_code}: {response.text[:200]}")


class EscalatingAgent(HttpUser):
    fixed_count = int(os.environ.get("LOAD_ESCALATING_USERS", "4"))
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        self.client.headers.update({"Authorization": f"Bearer {AGENT_TOKEN}"})

    @task
    def escalate_and_wait(self) -> None:
        body = {"request": approval_request(), "meta": {"tool_name": "restart_service"}}
        with self.client.post(
            "/api/v1/escalations", json=body, name="escalation create", catch_response=True
        ) as created:
            if created.status_code != 201:
                created.failure(f"{created.status_code}: {created.text[:200]}")
                return
        escalation = created.json()["id"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with self.client.get(
                f"/api/v1/escalations/{escalation}?wait={LONG_POLL}",
                name="escalation long-poll",
                catch_response=True,
            ) as answer:
                if answer.status_code != 200:
                    answer.failure(f"{answer.status_code}: {answer.text[:200]}")
                    return
                if answer.json()["status"] != "pending":
                    return


class Reviewer(HttpUser):
    fixed_count = int(os.environ.get("LOAD_REVIEWER_USERS", "2"))
    wait_time = constant_pacing(0.5)

    def on_start(self) -> None:
        self.client.headers.update({"Authorization": f"Bearer {REVIEWER_TOKEN}"})

    @task
    def review(self) -> None:
        with self.client.get(
            "/api/v1/escalations?status=pending&limit=20",
            name="escalations pending (reviewer)",
            catch_response=True,
        ) as listed:
            if listed.status_code != 200:
                listed.failure(f"{listed.status_code}: {listed.text[:200]}")
                return
        for item in listed.json()["items"][:5]:
            with self.client.post(
                f"/api/v1/escalations/{item['id']}/decision",
                json={"outcome": "approve", "reason": "load run"},
                name="decision (reviewer)",
                catch_response=True,
            ) as decided:
                if decided.status_code == 409:
                    decided.success()  # another reviewer decided it first: the contract
                elif decided.status_code != 200:
                    decided.failure(f"{decided.status_code}: {decided.text[:200]}")


class InboxSocket(User):
    """A reviewer's inbox websocket, held open; each frame is reported as a WS event."""

    fixed_count = int(os.environ.get("LOAD_SOCKET_USERS", "10"))
    wait_time = constant_pacing(0)
    counter = 0

    def on_start(self) -> None:
        InboxSocket.counter += 1
        session = SESSIONS[InboxSocket.counter % len(SESSIONS)] if SESSIONS else ""
        url = self.host.replace("http://", "ws://") + "/ws/approvals/?view=inbox"
        started = time.perf_counter()
        try:
            self.socket = websocket.create_connection(
                url, timeout=5, cookie=f"sessionid={session}", origin=self.host
            )
            error = None
        except Exception as exc:  # noqa: BLE001 - reported as a failed connect
            self.socket, error = None, exc
        events.request.fire(
            request_type="WS",
            name="connect /ws/approvals/?view=inbox",
            response_time=(time.perf_counter() - started) * 1000,
            response_length=0,
            exception=error,
            context={},
        )

    @task
    def receive(self) -> None:
        if self.socket is None:
            time.sleep(1)
            return
        started = time.perf_counter()
        try:
            frame = self.socket.recv()
        except websocket.WebSocketTimeoutException:
            return
        except Exception as exc:  # noqa: BLE001 - a dropped socket is a failure
            events.request.fire(request_type="WS", name="frame", response_time=0,
                                response_length=0, exception=exc, context={})  # fmt: skip
            self.socket = None
            return
        events.request.fire(
            request_type="WS",
            name="frame",
            response_time=(time.perf_counter() - started) * 1000,
            response_length=len(frame),
            exception=None,
            context={},
        )

    def on_stop(self) -> None:
        if self.socket is not None:
            self.socket.close()
