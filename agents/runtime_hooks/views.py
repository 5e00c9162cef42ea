"""`POST /api/v1/hooks/{runtime}` (async) and `GET /api/v1/connect/{runtime}`: other agent
runtimes call the console from their own hooks (README "Other agent runtimes")."""

from __future__ import annotations

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
from agents.runtime_hooks.evaluate import RecordingResponse, open_call, runtime_hook_answer
from agents.selectors import get_custom_agent
from agents.validation import NAME_RE
from approvals.live import remember_server_loop
from approvals.longpoll import error_response, released
from console.api import ApiError
from console.auth import IsAgentOrAdmin
from console.openapi import errors
from console.parsers import TOO_DEEP, DocumentRefused, ensure_storable, json_loads
from console_client.runtimes import RuntimeEvent, RuntimeInputError, parse, require_runtime


def _body(request: HttpRequest) -> Any:
    try:
        raw = request.body
    except RequestDataTooBig:
        raise ApiError("Request body is too large.", code="too_large", status_code=413) from None
    try:
        return ensure_storable(json_loads(raw))
    except DocumentRefused as exc:
        raise ApiError(exc.message, fields=exc.fields) from None
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
    name = request.GET.get("custom_agent", "")
    # Read before the database visit, refused after authentication: a caller without a
    # token learns nothing about what it sent.
    event: RuntimeEvent | None = None
    problem: ApiError | RuntimeInputError | None = None
    try:
        require_runtime(runtime)
        event = parse(runtime, _body(request), request.GET.get("event") or None)
    except (ApiError, RuntimeInputError) as exc:
        problem = exc
    try:
        opened = await released(open_call)(request, event, name)
    except Http404:
        return error_response(
            404,
            "not_found",
            f"No custom agent {name!r} for this agent token.",
            {"/custom_agent": ["No such custom agent."]},
        )
    if isinstance(opened, JsonResponse):
        return opened
    if isinstance(problem, RuntimeInputError):
        code = "not_found" if problem.status == 404 else "invalid"
        return error_response(problem.status, code, problem.message, problem.fields)
    if problem is not None:
        return error_response(
            problem.status_code, problem.error_code, problem.message, problem.fields
        )
    principal, prepared = opened
    assert event is not None and prepared is not None
    answered = await runtime_hook_answer(principal=principal, event=event, prepared=prepared)
    return RecordingResponse(answered)


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
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "application/toml"): OpenApiTypes.STR,
            **errors(400, 404),
        },
        description="The hook settings that connect this runtime to the console.",
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
