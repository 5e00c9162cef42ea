"""Django's ASGI handler, with one thread hop per request to a sync view.

Django builds one middleware chain for ASGI, async from the view up. A `MiddlewareMixin`
middleware in that chain runs each of its `process_request`/`process_response` through
`sync_to_async`, and a sync-only middleware flips the chain back: 18 crossings between the
event loop and the sync thread for a `GET /healthz` (a sync view, like nearly every view
here), each one a wait for the other side (docs/benchmarks.md, "Per-request hops").

`ConsoleAsgiHandler` keeps that chain for the async views (the approvals long-poll and the
hook endpoints that wait stay on the event loop, holding no thread; there the middleware's
hooks run on the loop, console.async_middleware) and serves every other
request through a second, all-sync chain of the same middleware, entered with one
`sync_to_async` hop. The view's URL decides which, resolved the way Django's own handler
resolves it (`ROOT_URLCONF`); a URL that resolves to nothing takes the sync chain (Django's
404 page is sync).

Each request's sync work runs on one thread, as with Django's handler, but the thread is
lent from a pool (`RequestThreads`) instead of being started for the request and joined
after it: a thread's start and join cost about 0.5 ms a request, and what libraries keep per
thread (Celery's producer, a Redis client's connection) was set up again on each request's
new thread (scheduling a Celery task 2.6 ms on a fresh thread, 0.8 ms on a used one; see
docs/benchmarks.md, fifth pass of issue 14). A thread goes back to the pool only once it is
idle: a request abandoned by its client may leave its view still running there.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, get_resolver

# Idle request threads kept for the next requests (more start when more requests are in
# flight at once; those beyond this many end when their request does).
IDLE_REQUEST_THREADS = 32


class RequestThreads:
    """Single-thread executors, each lent to one request at a time."""

    def __init__(self, keep: int = IDLE_REQUEST_THREADS) -> None:
        self.keep = keep
        self.idle: list[ThreadPoolExecutor] = []
        self.lock = threading.Lock()

    def borrow(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        """Back to the pool once everything already submitted to it has run."""
        done = executor.submit(_nothing)
        done.add_done_callback(lambda _: self._idle(executor))

    def _idle(self, executor: ThreadPoolExecutor) -> None:
        with self.lock:
            if len(self.idle) < self.keep:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)


def _nothing() -> None:
    return None


class ConsoleAsgiHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.sync_handler = BaseHandler()
        self.sync_handler.load_middleware(is_async=False)
        self.threads = RequestThreads()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)  # refuses it, as Django does
            return
        executor = self.threads.borrow()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.threads.give_back(executor)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        if view_is_async(request.path_info):
            response: HttpResponseBase = await super().get_response_async(request)
        else:
            in_thread = sync_to_async(self.sync_handler.get_response, thread_sensitive=True)
            response = await in_thread(request)
        return response


def view_is_async(path: str) -> bool:
    try:
        match = get_resolver().resolve(path)
    except Resolver404:
        return False
    return iscoroutinefunction(match.func)
