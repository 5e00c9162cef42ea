"""REST API v2 for custom agents and v1 for agent-level hooks (README "API").

Agent tokens act on their own agent; admins name the agent with `?agent=<slug>`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents import services
from agents.auth import principal_agent
from agents.models import Agent, CustomAgent
from agents.openapi import (
    DOCUMENT_EXAMPLE,
    HOOKS_EXAMPLE,
    AgentHooksSerializer,
    ExtendedAgentListSerializer,
    ExtendedAgentSerializer,
    HooksDocumentSerializer,
    SavedExtendedAgentSerializer,
    StoredExtendedAgentSerializer,
)
from agents.selectors import (
    agent_level_hooks,
    custom_agent_as_document,
    custom_agents_as_documents,
    get_agent_for_user,
    get_custom_agent,
)
from agents.validation import NAME_RE
from console.actors import is_agent, request_actor
from console.api import YAMLRenderer
from console.auth import IsAgentOrAdmin
from console.errors import InvalidInput
from console.openapi import errors
from console.parsers import YAML_PARSERS, JSONParser

AGENT_PARAM = OpenApiParameter(
    "agent", str, description="Agent slug (admins only; agent tokens act on their own agent)."
)


def with_warnings(body: dict[str, Any], warnings: dict[str, list[str]]) -> dict[str, Any]:
    return {**body, "warnings": warnings} if warnings else body


def request_agent(request: Request) -> Agent:
    user = request.user
    if is_agent(user):
        return principal_agent(user)
    slug = request.query_params.get("agent")
    if not slug:
        raise InvalidInput(
            "Name the agent with ?agent=<slug> (agent tokens need no parameter).",
            fields={"/agent": ["This query parameter is required for people."]},
        )
    if not NAME_RE.match(slug):
        raise NotFound("No such agent.")
    return get_agent_for_user(user, slug, write=True)


def _custom_agent(request: Request, name: str) -> CustomAgent:
    # A name no custom agent can have (a NUL byte, say) never reaches the database.
    if not NAME_RE.match(name):
        raise NotFound("No such custom agent.")
    return get_custom_agent(request_agent(request), name)


class _AgentConfigView(APIView):
    permission_classes = [IsAgentOrAdmin]
    renderer_classes = [JSONRenderer, YAMLRenderer]
    parser_classes = [JSONParser, *YAML_PARSERS]


class CustomAgentListApi(_AgentConfigView):
    @extend_schema(
        operation_id="custom_agents_list",
        parameters=[AGENT_PARAM],
        responses={200: ExtendedAgentListSerializer, **errors(400, 404)},
    )
    def get(self, request: Request) -> Response:
        return Response({"value": custom_agents_as_documents(request_agent(request))})


class CustomAgentDetailApi(_AgentConfigView):
    @extend_schema(
        parameters=[AGENT_PARAM], responses={200: StoredExtendedAgentSerializer, **errors(400, 404)}
    )
    def get(self, request: Request, name: str) -> Response:
        custom_agent = _custom_agent(request, name)
        return Response(custom_agent_as_document(custom_agent))

    @extend_schema(
        parameters=[AGENT_PARAM],
        request=ExtendedAgentSerializer,
        examples=[DOCUMENT_EXAMPLE],
        responses={
            200: SavedExtendedAgentSerializer,
            201: SavedExtendedAgentSerializer,
            **errors(400, 404),
        },
    )
    def put(self, request: Request, name: str) -> Response:
        agent = request_agent(request)
        custom_agent, created, warnings = services.custom_agent_put(
            actor=request_actor(request), agent=agent, name=name, document=request.data
        )
        return Response(
            with_warnings(custom_agent_as_document(custom_agent), warnings),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(parameters=[AGENT_PARAM], responses={204: None, **errors(400, 404)})
    def delete(self, request: Request, name: str) -> Response:
        custom_agent = _custom_agent(request, name)
        services.custom_agent_delete(actor=request_actor(request), custom_agent=custom_agent)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentHooksApi(_AgentConfigView):
    @extend_schema(
        parameters=[AGENT_PARAM], responses={200: AgentHooksSerializer, **errors(400, 404)}
    )
    def get(self, request: Request) -> Response:
        return Response({"hooks": agent_level_hooks(request_agent(request))})

    @extend_schema(
        parameters=[AGENT_PARAM],
        request=HooksDocumentSerializer,
        examples=[HOOKS_EXAMPLE],
        responses={200: AgentHooksSerializer, **errors(400, 404)},
    )
    def put(self, request: Request) -> Response:
        agent = request_agent(request)
        warnings = services.agent_hooks_replace(
            actor=request_actor(request), agent=agent, document=request.data
        )
        return Response(with_warnings({"hooks": agent_level_hooks(agent)}, warnings))
