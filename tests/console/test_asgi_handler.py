"""console.asgi_handler: a request to a sync view crosses from the event loop to the sync
thread once (Django's own handler: about twenty times), async views keep Django's async
chain, and both chains run the same middleware."""

from __future__ import annotations

import httpx
import pytest
from asgiref import sync
from django.core.handlers.asgi import ASGIHandler

from console.asgi_handler import ConsoleAsgiHandler, view_is_async

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hops(monkeypatch):
    """How many times a request crossed between the event loop and a sync thread."""
    counted = {"hops": 0}
    for adapter in (sync.SyncToAsync, sync.AsyncToSync):
        original = adapter.__call__

        def counting(self, *args, _original=original, **kwargs):
            counted["hops"] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(adapter, "__call__", counting)
    return counted


async def get(app, path: str, **kwargs) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.get(path, **kwargs)


@pytest.mark.asyncio
async def test_a_sync_view_costs_one_hop_where_djangos_handler_costs_many(hops):
    counts = {}
    for handler in (ASGIHandler(), ConsoleAsgiHandler()):
        await get(handler, "/healthz")  # warm: the first request loads what it needs
        hops["hops"] = 0
        response = await get(handler, "/healthz")
        assert response.status_code == 200 and response.json() == {"ok": True}
        counts[type(handler).__name__] = hops["hops"]
    # The request_started/finished signals' sync receivers hop as well, in both handlers.
    signals = 2
    assert counts["ConsoleAsgiHandler"] <= 1 + signals
    assert counts["ASGIHandler"] >= 10 + signals, counts


@pytest.mark.asyncio
async def test_both_chains_run_the_same_middleware():
    handler = ConsoleAsgiHandler()
    # Sync chain: the request id, the security headers, a refusal by the project's own
    # middleware, CSRF on a form post.
    page = await get(handler, "/accounts/login/", headers={"X-Request-ID": "req-sync-1"})
    assert page.status_code == 200
    assert page.headers["X-Request-ID"] == "req-sync-1"
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "content-security-policy" in page.headers
    transport = httpx.ASGITransport(app=handler)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        forged = await http.post("/accounts/login/", data={"username": "a", "password": "b"})
        nul = await http.get("/accounts/login/?next=%00")
    assert forged.status_code == 403
    assert nul.status_code == 400
    missing = await get(handler, "/no-such-page/")
    assert missing.status_code == 404 and "X-Request-ID" in missing.headers
    # Async chain: the long-poll answers an agent without a token through the same
    # middleware (request id, the API's error shape).
    poll = await get(handler, "/api/v1/escalations/abc?wait=1", headers={"X-Request-ID": "r-2"})
    assert poll.status_code == 401 and poll.headers["X-Request-ID"] == "r-2"


def test_only_the_async_views_take_the_async_chain():
    assert view_is_async("/api/v1/escalations/0f7c1a52-2c6c-4d0e-9a43-4b1f3e7f8a10")
    assert view_is_async("/api/v1/hooks/claude-code")
    for path in ("/healthz", "/api/v1/records", "/approvals/", "/api/v1/escalations", "/nope/"):
        assert not view_is_async(path), path
