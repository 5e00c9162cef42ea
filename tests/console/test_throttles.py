"""Agent endpoints answer 429 with Retry-After past the per-token rate."""

from __future__ import annotations

import threading

import pytest
import redis
from django.conf import settings
from django.core.cache import cache, caches
from django.test import Client
from rest_framework.settings import api_settings


@pytest.fixture
def tight_rate(monkeypatch):
    from console.throttles import AgentTokenRateThrottle

    monkeypatch.setattr(
        AgentTokenRateThrottle,
        "THROTTLE_RATES",
        {**api_settings.DEFAULT_THROTTLE_RATES, "agent": "3/min"},
    )
    cache.clear()
    yield
    cache.clear()


@pytest.mark.django_db
def test_agent_token_past_its_rate_gets_429_with_retry_after(sre, tight_rate):
    client = Client()
    statuses = [client.get("/api/v1/agent/hooks", **sre.headers()).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = client.get("/api/v1/agent/hooks", **sre.headers())
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["code"] == "throttled"


@pytest.mark.django_db
def test_one_agents_flood_does_not_throttle_another(sre, other, tight_rate):
    client = Client()
    for _ in range(4):
        client.get("/api/v1/agent/hooks", **sre.headers())
    assert client.get("/api/v1/agent/hooks", **other.headers()).status_code == 200


@pytest.mark.django_db
def test_people_are_not_counted_by_the_agent_limiter(admin_client, sre, tight_rate):
    statuses = {
        admin_client.get(f"/api/v1/agent/hooks?agent={sre.agent.slug}").status_code
        for _ in range(5)
    }
    assert statuses == {200}


@pytest.mark.redis
def test_the_limiter_counts_over_one_redis_pool_for_every_request_context():
    """Django makes a cache object per thread and per async request context; each used to
    open its own Redis connection, i.e. one per agent request on daphne."""

    def received() -> int:
        stats = redis.Redis.from_url(settings.REDIS_URL).info("stats")
        return int(stats["total_connections_received"])

    caches["default"].get("warm")  # the process's pool and its first connection
    before = received()

    def request_context() -> None:
        caches["default"].get_or_set("hits", 0)

    threads = [threading.Thread(target=request_context) for _ in range(12)]
    for thread in threads:
        thread.start()
        thread.join()
    # received()'s own connection, not one per context.
    assert received() - before <= 2


@pytest.mark.redis
def test_the_consoles_own_redis_client_is_built_once_per_process():
    """The limiter and the seal queue ask for it on every agent request; building a client
    reads redis-py's package metadata each time."""
    from console.cachepool import SharedConnectionPool, shared_redis

    client = shared_redis()
    assert shared_redis() is client
    assert client.connection_pool is SharedConnectionPool.from_url(settings.REDIS_URL)


@pytest.mark.django_db
def test_the_window_slides_the_last_periods_requests_fade_out_as_it_passes(
    sre, tight_rate, monkeypatch
):
    """3/min: the previous minute's count weighs by the part of it still inside the last
    60 s, so a burst at the end of one minute is not forgotten at the start of the next."""
    import console.throttles as throttles

    start = 1_000_020.0 - 1_000_020.0 % 60  # a window's start
    now = [start + 50]
    monkeypatch.setattr(throttles.time, "time", lambda: now[0])
    client = Client()

    def status() -> tuple[int, str | None]:
        response = client.get("/api/v1/agent/hooks", **sre.headers())
        return response.status_code, response.headers.get("Retry-After")

    assert [status()[0] for _ in range(3)] == [200, 200, 200]
    refused, retry = status()
    assert refused == 429 and retry is not None and 10 < int(retry) <= 60
    now[0] = start + 60 + 6  # 90 % of the last minute (4 requests) still inside: 3.6 > 3
    assert status()[0] == 429
    now[0] = start + 60 + 45  # 25 % inside: 1.0 + this one + the refused one above
    assert [status()[0] for _ in range(2)] == [200, 429]
    now[0] = start + 180  # two quiet minutes later: a fresh start
    assert [status()[0] for _ in range(3)] == [200, 200, 200]
