"""Redis carries wake-ups only: with it gone, a committed decision still reaches the long-poll
within one wait period (the slow re-check reads PostgreSQL)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import pytest
import redis
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from approvals import longpoll, services
from tests.approvals.conftest import in_own_thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis]
WAIT = 8


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_layer(port: int) -> dict:
    return {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [{"address": f"redis://127.0.0.1:{port}/0", "socket_timeout": 15}],
                "prefix": "fault",
            },
        }
    }


@pytest.fixture
def private_redis():
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(port=port)
    for _ in range(50):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)
    yield port, process
    process.kill()
    process.wait(timeout=10)


async def poll(agent, escalation) -> asyncio.Task:
    return asyncio.create_task(
        AsyncClient().get(
            f"/api/v1/escalations/{escalation.pk}?wait={WAIT}",
            headers={"Authorization": f"Bearer {agent.token}"},
        )
    )


async def test_decision_reaches_the_poll_after_redis_dies(
    sre, rita, escalate, settings, monkeypatch, private_redis, close_db_after
):
    port, process = private_redis
    settings.CHANNEL_LAYERS = redis_layer(port)
    monkeypatch.setattr(longpoll, "SAFETY_RECHECK_SECONDS", 1.0)
    escalation = await sync_to_async(escalate)()
    waiting = await poll(sre, escalation)
    await asyncio.sleep(0.5)  # subscribed on the private Redis
    process.kill()
    process.wait(timeout=10)
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=escalation,
        actor=rita,
        outcome="approve",
    )
    response = await asyncio.wait_for(waiting, timeout=WAIT + 5)
    body = response.json()
    assert body["status"] == "approved"
    assert body["resolution"]["outcome"] == "approve"


async def test_decision_reaches_the_poll_when_redis_was_never_there(
    sre, rita, escalate, settings, monkeypatch, close_db_after
):
    settings.CHANNEL_LAYERS = redis_layer(free_port())  # nothing listens there
    monkeypatch.setattr(longpoll, "SAFETY_RECHECK_SECONDS", 1.0)
    escalation = await sync_to_async(escalate)()  # its push fails; the create stands
    waiting = await poll(sre, escalation)
    await asyncio.sleep(0.3)
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=escalation,
        actor=rita,
        outcome="reject",
        reason="no",
    )
    body = (await asyncio.wait_for(waiting, timeout=WAIT + 5)).json()
    assert body["status"] == "rejected" and body["reason"] == "no"
