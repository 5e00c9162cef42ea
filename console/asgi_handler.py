"""Django's ASGI handler, with one thread hop per request to a sync view.

Django builds one middleware chain for ASGI, async from the view up. A `MiddlewareMixin`
middleware in that chain runs each of its `process_request`/`process_response` through
`sync_to_async`, and a sync-only middleware flips the chain back: 18 crossings between the
event loop and the sync thread for a `GET /healthz` (a sync view, like nearly every view
here), each one a wait for the other side (docs/benchmarks.md, "Per-request hops").

`ConsoleAsgiHandler` keeps that chain for the async views (the approvals long-poll and the
hook endpoints that wait stay on the event loop, holding no thread) and serves every other
request through a second, all-sync chain of the same middleware, entered with one
`sync_to_async` hop. The view's URL decides which, resolved the way Django's own handler
resolves it (`ROOT_URLCONF`); a URL that resolves to nothing takes the sync chain (Django's
404 page is sync).
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, get_resolver


class ConsoleAsgiHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.sync_handler = BaseHandler()
        self.sync_handler.load_middleware(is_async=False)

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
