"""approvals.live on the embedded default: the in-memory channel layer belongs to the
server's event loop, so a push from another thread (the embedded beat expiring an
escalation, a webhook thread) hops onto that loop instead of waking it from outside."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from channels.layers import get_channel_layer

from approvals import live
from console.embedded import channel_layer_in_process

# Far longer than a hop takes: a wake-up delivered from outside the loop is only noticed
# when something else wakes the loop, here this timeout.
RECEIVE_TIMEOUT = 6.0


@pytest.fixture
def server_loop(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An in-memory layer and a running 'server' loop in its own thread."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(live, "_server", {"loop": None, "thread": None})
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


async def _subscribe(group: str) -> str:
    live.remember_server_loop()  # as the consumer and the long-poll do
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return channel


async def _receive(channel: str) -> tuple[dict[str, Any], float]:
    began = time.monotonic()
    message = await asyncio.wait_for(get_channel_layer().receive(channel), RECEIVE_TIMEOUT)
    return message, time.monotonic() - began


def test_a_decision_pushed_from_another_thread_wakes_the_long_poll_at_once(server_loop):
    assert channel_layer_in_process(get_channel_layer())
    escalation_id = uuid.uuid4()
    group = live.escalation_group(escalation_id)
    channel = asyncio.run_coroutine_threadsafe(_subscribe(group), server_loop).result(5)
    waiting = asyncio.run_coroutine_threadsafe(_receive(channel), server_loop)
    time.sleep(0.2)  # the receiver waits on the server loop

    live.escalation_changed(escalation_id, "decided")  # from this thread, like the beat

    message, waited = waiting.result(RECEIVE_TIMEOUT + 2)
    assert message == {"type": "escalation.decided", "id": str(escalation_id)}
    assert waited < 2.0


class _HeldLayer:
    """A channel layer whose sends wait at a gate (Redis slow to answer)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        await self.gate.wait()
        self.sent.append((group, message))


def test_a_request_answers_without_waiting_for_its_push_which_still_goes_out(
    server_loop, monkeypatch
):
    """A sync view's commit hook hands the sends to the serving loop: the response does not
    wait for Redis, and the wake-ups still go out, the agent's first."""
    from asgiref.sync import sync_to_async

    layer = _HeldLayer()
    monkeypatch.setattr(live, "get_channel_layer", lambda: layer)
    escalation_id = uuid.uuid4()

    def view() -> list[tuple[str, dict[str, Any]]]:  # a decision's on_commit, in the request
        live.escalation_changed(escalation_id, "decided")
        return list(layer.sent)

    async def request() -> list[tuple[str, dict[str, Any]]]:
        return await sync_to_async(view)()

    sent_when_answered = asyncio.run_coroutine_threadsafe(request(), server_loop).result(5)
    assert sent_when_answered == []

    server_loop.call_soon_threadsafe(layer.gate.set)
    deadline = time.monotonic() + 5
    while len(layer.sent) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [group for group, _ in layer.sent] == [
        live.escalation_group(escalation_id),
        live.REVIEWERS_GROUP,
    ]
