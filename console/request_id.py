"""The request id: one id per HTTP request, websocket connection or Celery task run, kept in
a context variable so the governance log can store it on each event it writes.

- HTTP: `RequestIdMiddleware` takes the caller's `X-Request-ID` when it is usable (1-64
  characters of `A-Z a-z 0-9 . _ : -`, starting with a letter or digit), else makes one,
  and answers it in the `X-Request-ID` response header.
- Websockets: `RequestIdAsgiMiddleware` does the same for the handshake's `X-Request-ID`
  and keeps the id for the whole connection (also in `scope["request_id"]`).
- Celery: a task published while an id is bound carries it in the message header
  `console_request_id` and runs with it bound; a task published without one (the beat's
  periodic sweeps) runs with none, so its events store null. Eager tasks (the embedded
  default) run in the caller's context and see the caller's id.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_MAX_CHARS = 64
TASK_HEADER = "console_request_id"
_USABLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")

_current: ContextVar[str | None] = ContextVar("console_request_id", default=None)


def current_request_id() -> str | None:
    """The id bound to what is running now, or None (periodic work, shell, tests)."""
    return _current.get()


def request_id_usable(value: object) -> bool:
    return isinstance(value, str) and _USABLE.fullmatch(value) is not None


def request_id_accept(offered: object) -> str:
    """The caller's id when it is usable, else a new one."""
    if isinstance(offered, str) and request_id_usable(offered):
        return offered
    return uuid.uuid4().hex


@contextmanager
def request_id_bound(value: str | None) -> Iterator[str | None]:
    token = _current.set(value)
    try:
        yield value
    finally:
        _current.reset(token)


class RequestIdMiddleware:
    """First in MIDDLEWARE, so every answer carries the id, refusals included. Sync and
    async capable: the approvals long-poll stays on the event loop."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        value = request_id_accept(request.headers.get(REQUEST_ID_HEADER))
        with request_id_bound(value):
            response: HttpResponse = self.get_response(request)
        response[REQUEST_ID_HEADER] = value
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        value = request_id_accept(request.headers.get(REQUEST_ID_HEADER))
        with request_id_bound(value):
            response: HttpResponse = await self.get_response(request)
        response[REQUEST_ID_HEADER] = value
        return response


class RequestIdAsgiMiddleware:
    """Wraps the websocket application: one id per connection, bound while it is open."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        offered = None
        for name, raw in scope.get("headers") or ():
            if name.lower() == b"x-request-id":
                offered = raw.decode("latin-1")
        value = request_id_accept(offered)
        with request_id_bound(value):
            return await self.app({**scope, "request_id": value}, receive, send)


# --- Celery ---------------------------------------------------------------------------------
# Connected by console.celery. The reset tokens are keyed by task id: prerun and postrun of a
# task run in the same worker thread.
_task_tokens: dict[str, Token[str | None]] = {}


def task_publish_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    value = current_request_id()
    if value is not None and headers is not None:
        headers.setdefault(TASK_HEADER, value)


def task_bind_request_id(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    value = getattr(getattr(task, "request", None), TASK_HEADER, None)
    if task_id and request_id_usable(value):
        _task_tokens[task_id] = _current.set(value)


def task_unbind_request_id(task_id: str | None = None, **_: Any) -> None:
    token = _task_tokens.pop(task_id or "", None)
    if token is not None:
        _current.reset(token)
