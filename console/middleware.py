"""Refuse oversized API bodies with 413, and bodies of unknown length with 411, before
anything parses them."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from console.api import error_body


class BodySizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.path.startswith("/api/")
            and request.method in ("POST", "PUT", "PATCH")
            and not request.META.get("CONTENT_LENGTH")
            and request.META.get("HTTP_TRANSFER_ENCODING")
        ):
            # DRF reads a body without Content-Length as empty: refuse it rather than act on
            # an empty document.
            body = error_body("length_required", "Send the body with a Content-Length header.")
            return HttpResponse(json.dumps(body), status=411, content_type="application/json")
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw)
        except ValueError:
            length = 0
        limit: int = settings.MAX_BODY_BYTES
        if length > limit and request.path.startswith("/api/"):
            body = error_body("too_large", f"Request body is {length} bytes; the limit is {limit}.")
            return HttpResponse(json.dumps(body), status=413, content_type="application/json")
        return self.get_response(request)
