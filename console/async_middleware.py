"""Django's middleware for the async views, without a thread hop per hook.

In Django's async chain a `MiddlewareMixin` middleware runs each `process_request` and
`process_response` through `sync_to_async`: a wait for a thread and back for every hook,
because a hook may block. The hooks of the middleware here never block (they set headers,
compare cookies, build lazy objects), so in the async chain they run on the event loop; in
the sync chain (every sync view: console.asgi_handler) nothing changes. A hook that would
do I/O still takes the thread: the session's save, a CSRF secret kept in the session, a
message that must be stored. WhiteNoise, which is sync only and so put the whole async
chain below it through a thread and back, passes non-static requests straight on.

For the long-poll this took 12 of its 18 crossings away; the answer after a wake-up no
longer waits for six of them (docs/benchmarks.md, "Eighth pass of issue 14").

Django's deploy checks security.W001-W003 look for Django's own class paths in MIDDLEWARE
and would warn about these subclasses: settings silence those three, and `middleware_check`
(registered by the console app) asks the same of MIDDLEWARE, subclasses accepted, as an
error.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.core import checks
from django.http import HttpRequest, HttpResponseBase
from django.middleware import clickjacking, common, csp, csrf, security
from django.utils.module_loading import import_string
from whitenoise.middleware import WhiteNoiseMiddleware


class InlineHooks:
    """For a MiddlewareMixin subclass: in the async chain, run the hooks on the event loop
    unless `request_blocks`/`response_blocks` says that this call would do I/O."""

    def request_blocks(self, request: HttpRequest) -> bool:
        return False

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        return False

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response: Any = None
        process_request = getattr(self, "process_request", None)
        if process_request is not None:
            if self.request_blocks(request):
                response = await sync_to_async(process_request, thread_sensitive=True)(request)
            else:
                response = process_request(request)
        if response is None:
            response = await self.get_response(request)  # type: ignore[attr-defined]
        process_response = getattr(self, "process_response", None)
        if process_response is not None:
            if self.response_blocks(request, response):
                in_thread = sync_to_async(process_response, thread_sensitive=True)
                response = await in_thread(request, response)
            else:
                response = process_response(request, response)
        answer: HttpResponseBase = response
        return answer


class SecurityMiddleware(InlineHooks, security.SecurityMiddleware):
    pass


class CommonMiddleware(InlineHooks, common.CommonMiddleware):
    pass


class XFrameOptionsMiddleware(InlineHooks, clickjacking.XFrameOptionsMiddleware):
    pass


class ContentSecurityPolicyMiddleware(InlineHooks, csp.ContentSecurityPolicyMiddleware):
    pass


class AuthenticationMiddleware(InlineHooks, auth.AuthenticationMiddleware):
    """Sets a lazy `request.user`: nothing is read until a view asks."""


class SessionMiddleware(InlineHooks, sessions.SessionMiddleware):
    """The store is lazy; only a save (a modified session, or every request) takes a thread."""

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        session = getattr(request, "session", None)
        if session is None:
            return False
        return bool(session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class CsrfViewMiddleware(InlineHooks, csrf.CsrfViewMiddleware):
    """The secret is a cookie; kept in the session (CSRF_USE_SESSIONS) it is read from it.
    `process_view` too runs on the loop in the async chain (Django would hop for it)."""

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        if iscoroutinefunction(get_response) and not settings.CSRF_USE_SESSIONS:
            check = super().process_view

            async def process_view(*args: Any) -> HttpResponseBase | None:
                return check(*args)

            self.process_view = process_view  # type: ignore[method-assign,assignment]

    def request_blocks(self, request: HttpRequest) -> bool:
        return bool(settings.CSRF_USE_SESSIONS)

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        return bool(settings.CSRF_USE_SESSIONS)


class MessageMiddleware(InlineHooks, messages.MessageMiddleware):
    """Storing messages may write the session (the fallback storage); nothing to store is
    the usual case of an async view."""

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and bool(storage.used or storage.added_new)


class StaticFilesMiddleware(WhiteNoiseMiddleware):  # type: ignore[misc]
    """WhiteNoise, async capable: a static file is served from a thread (it opens the file),
    any other request goes on to the next middleware on the event loop."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(get_response, *args, **kwargs)
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        if self.autorefresh:  # looks on disk (DEBUG)
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is None:
            response: HttpResponseBase = await self.get_response(request)
            return response
        served: HttpResponseBase = await sync_to_async(self.serve, thread_sensitive=True)(
            static_file, request
        )
        return served


# What Django's security.W001-W003 ask for, subclasses accepted.
REQUIRED_MIDDLEWARE = {
    "console.E001": security.SecurityMiddleware,
    "console.E002": clickjacking.XFrameOptionsMiddleware,
    "console.E003": csrf.CsrfViewMiddleware,
}


def middleware_check(**kwargs: Any) -> list[checks.CheckMessage]:
    present = [import_string(path) for path in settings.MIDDLEWARE]
    return [
        checks.Error(
            f"No {required.__module__}.{required.__qualname__} (or subclass) in MIDDLEWARE.",
            hint="console/settings.py lists the console's subclasses of Django's middleware.",
            id=check_id,
        )
        for check_id, required in REQUIRED_MIDDLEWARE.items()
        if not any(issubclass(cls, required) for cls in present if isinstance(cls, type))
    ]


def stock_middleware(paths: list[str]) -> list[str]:
    """`paths` with Django's own class in place of each of this module's: what Django alone
    would run (the baseline of bench/asgi_hops.py and of the hop-count tests)."""
    return [_stock_path(path) if path.startswith(f"{__name__}.") else path for path in paths]


def _stock_path(path: str) -> str:
    cls = import_string(path)
    base = next(b for b in cls.__mro__[1:] if not b.__module__.startswith("console."))
    return f"{base.__module__}.{base.__qualname__}"
