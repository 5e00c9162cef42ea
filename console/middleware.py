"""Refuse oversized API bodies with 413 before anything parses them."""

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
