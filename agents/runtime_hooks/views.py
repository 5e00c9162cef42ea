"""`POST /api/v1/hooks/{runtime}` (async) and `GET /api/v1/connect/{runtime}` (DESIGN §6)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.request import Request
from rest_framework.views import APIView

from agents.api import AGENT_PARAM, request_agent
from agents.runtime_hooks.connect import ConnectError, connect_file
from agents.runtime_hooks.evaluate import runtime_hook_call
from agents.selectors import get_custom_agent
from agents.validation import NAME_RE
from approvals.live import remember_server_loop
from approvals.longpoll import agent_principal, error_response, released
from audit.services import RecordStoreUnavailable
from console.api import ApiError
from console.auth import IsAgentOrAdmin
from console.openapi import errors
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


# Bearer tokens only, never cookies: no cross-site request can carry the credential.
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


class ConnectApi(APIView):
    """`GET /api/v1/connect/{runtime}?custom_agent=&form=`: the runtime's settings file."""

    permission_classes = [IsAgentOrAdmin]

    @extend_schema(
        parameters=[
            AGENT_PARAM,
            OpenApiParameter("custom_agent", str, description="Add this custom agent's hooks."),
            OpenApiParameter(
                "form",
                str,
                description="claude-code: settings (default) or managed; codex: hooks "
                "(default) or config (TOML); the other runtimes have one form.",
            ),
            OpenApiParameter("download", bool, description="Answer as a file attachment."),
        ],
        responses={200: OpenApiTypes.OBJECT, **errors(400, 404)},
        description="The hook settings that connect this runtime to the console (DESIGN §6).",
    )
    def get(self, request: Request, runtime: str) -> HttpResponse:
        agent = request_agent(request)
        name = request.query_params.get("custom_agent") or ""
        custom_agent = None
        if name:
            if not NAME_RE.match(name):
                raise NotFound("No such custom agent.")
            custom_agent = get_custom_agent(agent, name)
        try:
            found = connect_file(
                agent=agent,
                custom_agent=custom_agent,
                runtime=runtime,
                base_url=request.build_absolute_uri("/"),
                form=request.query_params.get("form", ""),
            )
        except ConnectError as exc:
            status = 404 if "/runtime" in exc.fields else 400
            code = "not_found" if status == 404 else "invalid"
            raise ApiError(exc.message, code=code, status_code=status, fields=exc.fields) from None
        response = HttpResponse(found.text, content_type=f"{found.content_type}; charset=utf-8")
        if request.query_params.get("download") in ("1", "true"):
            response["Content-Disposition"] = f'attachment; filename="{found.filename}"'
        return response
