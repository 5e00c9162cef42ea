"""console.asgi_handler: a request to a sync view crosses from the event loop to the sync
thread once (Django's own handler: about twenty times), async views keep Django's async
chain, both chains run the same middleware, and a request's thread is lent from a pool."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from asgiref import sync
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started

from console.asgi_handler import ConsoleAsgiHandler, RequestThreads, view_is_async
from console.async_middleware import stock_middleware

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


@pytest.fixture
def djangos_middleware(settings):
    """MIDDLEWARE with Django's own classes in place of console.async_middleware's."""
    settings.MIDDLEWARE = stock_middleware(settings.MIDDLEWARE)


@pytest.mark.asyncio
async def test_a_sync_view_costs_one_hop_where_djangos_handler_costs_many(hops, djangos_middleware):
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


@pytest.mark.asyncio
async def test_each_request_runs_on_one_thread_and_the_next_reuses_it():
    """The request signals' receivers and the sync chain of one request share a thread,
    and requests one after another are served by the same (pooled) thread, not a new one
    each (Django's own handler starts one per request)."""
    handler = ConsoleAsgiHandler()
    seen: list[list[threading.Thread]] = []

    def signal(sender, **kwargs):
        seen[-1].append(threading.current_thread())

    chain = handler.sync_handler.get_response

    def get_response(request):
        seen[-1].append(threading.current_thread())
        return chain(request)

    handler.sync_handler.get_response = get_response
    request_started.connect(signal)
    request_finished.connect(signal)
    try:
        for _ in range(3):
            seen.append([])
            assert (await get(handler, "/healthz")).status_code == 200
            await asyncio.sleep(0.05)  # the thread goes back to the pool once idle
    finally:
        request_started.disconnect(signal)
        request_finished.disconnect(signal)
    threads = [thread for request in seen for thread in request]
    assert [len(request) for request in seen] == [3, 3, 3]
    assert all(thread is threads[0] for thread in threads)
    assert threads[0] is not threading.main_thread()


def _until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_thread_still_busy_is_not_lent_until_it_is_idle():
    """A request abandoned by its client may leave its view running on the thread: the
    thread rejoins the pool only after that, so no request queues behind another."""
    threads = RequestThreads(keep=2)
    busy = threads.borrow()
    release = threading.Event()
    busy.submit(release.wait, 10)
    threads.give_back(busy)
    other = threads.borrow()
    assert other is not busy and threads.idle == []
    release.set()
    assert _until(lambda: threads.idle == [busy])
    assert threads.borrow() is busy
    threads.give_back(other)


def test_idle_threads_beyond_the_pool_size_end():
    threads = RequestThreads(keep=1)
    first, second = threads.borrow(), threads.borrow()
    threads.give_back(first)
    threads.give_back(second)
    assert _until(lambda: threads.idle == [first])
    with pytest.raises(RuntimeError):
        second.submit(print)
