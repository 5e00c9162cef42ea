"""`POST /api/v1/hooks/{runtime}` (async) and `GET /api/v1/connect/{runtime}` (DESIGN §6)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import ParseError

from agents.runtime_hooks.evaluate import runtime_hook_call
from approvals.live import remember_server_loop
from approvals.longpoll import agent_principal, error_response, released
from audit.services import RecordStoreUnavailable
from console.api import ApiError
from console.parsers import TOO_DEEP, ensure_storable
from console_client.runtimes import RUNTIMES, RuntimeInputError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _body(request: HttpRequest) -> Any:
    try:
        raw = request.body
    except RequestDataTooBig:
        raise ApiError("Request body is too large.", code="too_large", status_code=413) from None
    try:
        return ensure_storable(json.loads(raw, parse_constant=_reject_constant))
    except RecursionError:
        raise ApiError(TOO_DEEP, code="malformed") from None
    except (ValueError, ParseError) as exc:
        raise ApiError(f"The body is not JSON: {exc}", code="malformed") from None


# Agent-token authenticated, never by a session cookie: CSRF does not apply, and the runtimes
# (Claude Code's http hooks, console-hook) send no CSRF token.
@csrf_exempt
async def runtime_hook(request: HttpRequest, runtime: str) -> JsonResponse:
    """The runtime's hook input in, the runtime's hook output out (200), or an error."""
    if request.method != "POST":
        return error_response(405, "method_not_allowed", f"Method {request.method} not allowed.")
    remember_server_loop()
    principal = await released(agent_principal)(request)
    if isinstance(principal, JsonResponse):
        return principal
    if runtime not in RUNTIMES:
        return error_response(
            404,
            "not_found",
            f"Unknown runtime {runtime!r}; use one of {', '.join(RUNTIMES)}.",
            {"/runtime": [f"Use one of {', '.join(RUNTIMES)}."]},
        )
    try:
        body = _body(request)
        answer = await runtime_hook_call(
            principal=principal,
            runtime=runtime,
            body=body,
            event_name=request.GET.get("event") or None,
            custom_agent_name=request.GET.get("custom_agent", ""),
        )
    except ApiError as exc:
        return error_response(exc.status_code, exc.error_code, exc.message, exc.fields)
    except RuntimeInputError as exc:
        code = "not_found" if exc.status == 404 else "invalid"
        return error_response(exc.status, code, exc.message, exc.fields)
    except Http404:
        name = request.GET.get("custom_agent", "")
        return error_response(
            404,
            "not_found",
            f"No custom agent {name!r} for this agent token.",
            {"/custom_agent": ["No such custom agent."]},
        )
    except RecordStoreUnavailable as exc:
        response = error_response(503, "unavailable", f"Records cannot be stored now: {exc}")
        response["Retry-After"] = "1"
        return response
    return JsonResponse(answer)
