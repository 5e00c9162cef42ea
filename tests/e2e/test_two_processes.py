"""Two console processes behind one database and one Redis: what a scaled-out deployment needs.

Two real daphne servers on two loopback ports share this run's PostgreSQL test database and
Redis (channels-redis). A reviewer's socket on one sees escalations created through the
other; a decision made on one wakes an agent long-polling on the other; the same record
batch posted to both at once is stored exactly once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import websocket
from django.conf import settings
from django.test import Client

from approvals.live import escalation_group
from approvals.longpoll import SAFETY_RECHECK_SECONDS
from audit.models import InterceptionRecord
from console import services as console_services
from tests.approvals.conftest import approval_request, ensure_approval_hook, make_reviewer
from tests.audit.record_wires import items, sdk_session
from tests.conftest import AgentWithToken
from tests.e2e.live import LiveConsole, start_console, stop_console

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql, pytest.mark.redis]


@pytest.fixture(scope="module")
def consoles(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveConsole, LiveConsole]]:
    if not os.environ.get("REDIS_URL"):
        pytest.skip("two processes share their wake-ups through Redis (set REDIS_URL)")
    logs: Path = tmp_path_factory.mktemp("two-consoles")
    with ThreadPoolExecutor(max_workers=2) as pool:
        # Generous: two servers importing Django at once on a busy 2-core machine.
        started = list(
            pool.map(lambda log: start_console(log, timeout=90), [logs / "a.log", logs / "b.log"])
        )
    try:
        yield started[0], started[1]
    finally:
        for console in started:
            stop_console(console)


class InboxSocket:
    """A reviewer's `/ws/approvals/?view=inbox` on one process; frames collected by a thread."""

    def __init__(self, console: LiveConsole, session_key: str) -> None:
        self.frames: list[str] = []
        self.arrived = threading.Condition()
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{console.port}/ws/approvals/?view=inbox",
            header=[f"Cookie: sessionid={session_key}"],
            origin=console.url,
            timeout=15,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                frame = self.ws.recv()
            except (websocket.WebSocketException, OSError):
                return
            with self.arrived:
                self.frames.append(frame)
                self.arrived.notify_all()

    def wait_for(self, needle: str, timeout: float = 10) -> str:
        with self.arrived:
            found = self.arrived.wait_for(
                lambda: next((f for f in self.frames if needle in f), None), timeout
            )
        assert found, f"no frame with {needle!r} in {len(self.frames)} frames"
        return found

    def close(self) -> None:
        self.ws.close()


def _reviewer_session() -> tuple[Any, str]:
    reviewer = make_reviewer("rita")
    client = Client()
    client.force_login(reviewer)
    return reviewer, client.cookies["sessionid"].value


def _escalate(console: LiveConsole, agent: AgentWithToken) -> str:
    ensure_approval_hook(agent)
    response = httpx.post(
        f"{console.url}/api/v1/escalations",
        json={"request": approval_request()},
        headers={"Authorization": f"Bearer {agent.token}"},
        timeout=15,
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_a_reviewer_on_one_process_sees_an_escalation_created_through_the_other(consoles, sre):
    a, b = consoles
    _reviewer, session_key = _reviewer_session()
    socket = InboxSocket(a, session_key)
    try:
        socket.wait_for('id="pending-rows"')  # the re-sync on connect
        escalation = _escalate(b, sre)
        socket.wait_for(f'id="esc-{escalation}"')
    finally:
        socket.close()


def test_a_decision_on_one_process_wakes_the_agent_long_polling_on_the_other(consoles, sre):
    a, b = consoles
    reviewer, _session = _reviewer_session()
    token = console_services.api_token_issue(actor=None, user=reviewer, name="e2e").plaintext
    escalation = _escalate(b, sre)
    answers: list[tuple[float, httpx.Response]] = []

    def long_poll() -> None:
        response = httpx.get(
            f"{b.url}/api/v1/escalations/{escalation}",
            params={"wait": 30},
            headers={"Authorization": f"Bearer {sre.token}"},
            timeout=40,
        )
        answers.append((time.monotonic(), response))

    poller = threading.Thread(target=long_poll)
    poller.start()
    # Decide only once B's long-poll has subscribed to the escalation's group in Redis, so
    # the answer can only come from a wake-up that crossed processes (or the slow re-check).
    group_channel = f"{settings.CHANNEL_LAYERS['default']['CONFIG']['prefix']}__group__" + (
        escalation_group(escalation)
    )
    store = redis.Redis.from_url(os.environ["REDIS_URL"])
    deadline = time.monotonic() + 15
    while not dict(store.pubsub_numsub(group_channel)).get(group_channel.encode()):
        assert time.monotonic() < deadline, "the long-poll never subscribed"
        time.sleep(0.02)
    store.close()
    decided_at = time.monotonic()
    decision = httpx.post(
        f"{a.url}/api/v1/escalations/{escalation}/decision",
        json={"outcome": "approve"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=15,
    )
    assert decision.status_code == 200, decision.text
    poller.join(timeout=40)
    (answered_at, answer), *_ = answers
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "approved"
    # Not the slow database re-check (every SAFETY_RECHECK_SECONDS) but the push from A.
    assert answered_at - decided_at < SAFETY_RECHECK_SECONDS


def test_one_batch_posted_to_both_processes_at_once_is_stored_exactly_once(consoles, sre):
    a, b = consoles
    batch = items(sdk_session(["ls", "rm", "deploy", "cat", "grep"]))
    body = json.dumps(batch)
    start = threading.Barrier(2)

    def post(console: LiveConsole) -> dict[str, int]:
        start.wait()
        response = httpx.post(
            f"{console.url}/api/v1/records",
            content=body,
            headers={"Authorization": f"Bearer {sre.token}", "Content-Type": "application/json"},
            timeout=30,
        )
        assert response.status_code == 202, response.text
        return dict(response.json())

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(post, [a, b]))
    assert sum(answer["accepted"] for answer in answers) == len(batch), answers
    assert sum(answer["duplicates"] for answer in answers) == len(batch), answers
    assert InterceptionRecord.objects.filter(agent=sre.agent).count() == len(batch)
