"""Requests refused before anything reads them: oversized API bodies (413), API bodies of
unknown length (411), and addresses holding a NUL byte (400); and the answer to a
`DomainError` a view leaves uncaught (`DomainErrorMiddleware`)."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.deprecation import MiddlewareMixin

from console.errors import DomainError, error_body


class RefusingMiddleware:
    """Sync and async capable, so an async view (the approvals long-poll) is not pushed onto
    a thread: subclasses say in `refuse()` which requests never reach the view."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        raise NotImplementedError

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        return self.refuse(request) or self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self.refuse(request) or await self.get_response(request)


class BodySizeLimitMiddleware(RefusingMiddleware):
    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        if (
            request.path.startswith("/api/")
            and request.method in ("POST", "PUT", "PATCH")
            and not request.META.get("CONTENT_LENGTH")
            and request.META.get("HTTP_TRANSFER_ENCODING")
        ):
            # DRF reads a body without Content-Length as empty: refuse it rather than act on
            # an empty document.
            body = error_body("length_required", "Send the body with a Content-Length header.")
            return _json(body, 411)
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw)
        except ValueError:
            length = 0
        limit: int = settings.MAX_BODY_BYTES
        if length > limit and request.path.startswith("/api/"):
            body = error_body("too_large", f"Request body is {length} bytes; the limit is {limit}.")
            return _json(body, 413)
        return None


class NulByteGuardMiddleware(RefusingMiddleware):
    """Answer 400 to a path or query string holding a NUL byte: PostgreSQL refuses NUL in
    text, so such a value would otherwise fail as a 500 in whichever lookup met it first."""

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            message = "The address contains a NUL byte."
            if request.path.startswith("/api/"):
                return _json(error_body("invalid", message), 400)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
        return None


def _json(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(
        json.dumps(body), status=status, content_type="application/json", headers=headers
    )


class DomainErrorMiddleware(MiddlewareMixin):
    """The one answer to a DomainError that a plain Django view leaves uncaught (DRF views
    answer theirs in console.api.exception_handler). Under /api/ (the long-poll, runtime
    hooks, Slack): the API's error shape, status and headers. In the portal: the styled
    error page with the error's status; an htmx request gets the page's content swapped into
    `<main>` with 200, because htmx swaps no error status by default."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DomainError):
            return None
        if request.path.startswith("/api/"):
            return _json(exception.body(), exception.status, exception.headers)
        context = {"error": exception}
        htmx = getattr(request, "htmx", None)
        if htmx and not htmx.boosted and not htmx.history_restore_request:
            response = render(request, "error.html#error", context)
            response["HX-Retarget"] = "main.page"
            response["HX-Reswap"] = "innerHTML"
            return response
        return render(request, "error.html", context, status=exception.status)
