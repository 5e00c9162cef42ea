"""GET /api/v1/declaration: the effective hook declaration an agent process loads."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.auth import principal_agent
from agents.declaration import declaration_document
from agents.openapi import DeclarationSerializer
from agents.selectors import get_custom_agent
from console.auth import IsAgent
from console.openapi import errors


def _etag_matches(header: str, digest: str) -> bool:
    if header.strip() == "*":
        return True
    candidates = [item.strip().removeprefix("W/").strip('"') for item in header.split(",")]
    return digest in candidates


class DeclarationApi(APIView):
    permission_classes = [IsAgent]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "custom_agent", str, description="Add this custom agent's hooks after the agent's."
            )
        ],
        responses={200: DeclarationSerializer, 304: None, **errors(404)},
    )
    def get(self, request: Request) -> Response:
        agent = principal_agent(request.user)
        name = request.query_params.get("custom_agent") or None
        custom_agent = get_custom_agent(agent, name) if name else None
        document = declaration_document(agent, custom_agent)
        digest = document["extensions"]["console"]["digest"]
        headers = {"ETag": f'"{digest}"', "Cache-Control": "no-cache"}
        if _etag_matches(request.headers.get("If-None-Match", ""), digest):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers=headers)
        return Response(document, headers=headers)
