"""`POST /api/v1/hooks/{runtime}` (async) and `GET /api/v1/connect/{runtime}`: other agent
runtimes call the console from their own hooks (README "Other agent runtimes")."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.views import APIView

from agents.api import AGENT_PARAM, request_agent
from agents.selectors import get_custom_agent
from agents.validation import NAME_RE
from approvals.live import remember_server_loop
from approvals.longpoll import released
from console.auth import IsAgentOrAdmin
from console.errors import DomainError, InvalidInput, MethodNotAllowed, NotFound, TooLarge
from console.openapi import errors
from console.parsers import TOO_DEEP, ensure_storable, json_loads
from console_client.runtimes import RuntimeEvent, RuntimeInputError, parse, require_runtime
from runtimes.connect import connect_file
from runtimes.evaluate import RecordingResponse, open_call, runtime_hook_answer


def _body(request: HttpRequest) -> Any:
    try:
        raw = request.body
    except RequestDataTooBig:
        raise TooLarge("Request body is too large.") from None
    try:
        return ensure_storable(json_loads(raw))
    except RecursionError:
        raise InvalidInput(TOO_DEEP, code="malformed") from None
    except (ValueError, ParseError) as exc:
        raise InvalidInput(f"The body is not JSON: {exc}", code="malformed") from None


# Bearer tokens only, never cookies: no cross-site request can carry the credential.
@csrf_exempt
async def runtime_hook(request: HttpRequest, runtime: str) -> JsonResponse:
    """The runtime's hook input in, the runtime's hook output out (200), or an error."""
    if request.method != "POST":
        raise MethodNotAllowed(f"Method {request.method} not allowed.")
    remember_server_loop()
    name = request.GET.get("custom_agent", "")
    # Read before the database visit, refused after authentication: a caller without a
    # token learns nothing about what it sent.
    event: RuntimeEvent | None = None
    problem: DomainError | None = None
    try:
        require_runtime(runtime)
        event = parse(runtime, _body(request), request.GET.get("event") or None)
    except DomainError as exc:
        problem = exc
    except RuntimeInputError as exc:  # console_client's own error (it imports no Django)
        refusal = NotFound if exc.status == 404 else InvalidInput
        problem = refusal(exc.message, fields=exc.fields)
    try:
        opened = await released(open_call)(request, event, name)
    except Http404:
        raise NotFound(
            f"No custom agent {name!r} for this agent token.",
            fields={"/custom_agent": ["No such custom agent."]},
        ) from None
    if problem is not None:
        raise problem
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
        found = connect_file(
            agent=agent,
            custom_agent=custom_agent,
            runtime=runtime,
            base_url=request.build_absolute_uri("/"),
            form=request.query_params.get("form", ""),
        )
        response = HttpResponse(found.text, content_type=f"{found.content_type}; charset=utf-8")
        if request.query_params.get("download") in ("1", "true"):
            response["Content-Disposition"] = f'attachment; filename="{found.filename}"'
        return response
