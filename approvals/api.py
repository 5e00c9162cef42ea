"""Escalations API: agents open escalations, reviewers list and decide them.

The agent's long-poll (`GET /api/v1/escalations/{id}?wait=N`) is an async view of its own,
in approvals/longpoll.py.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.db.models import Q, QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals import services
from approvals.models import Escalation, EscalationStatus
from approvals.openapi import (
    DECISION_EXAMPLE,
    ESCALATION_EXAMPLE,
    DecisionAnswerSerializer,
    DecisionSerializer,
    EscalationCreatedSerializer,
    EscalationCreateSerializer,
    EscalationPageSerializer,
)
from approvals.selectors import escalations_visible_to, get_escalation_for_user
from approvals.validation import parse_decision
from approvals.wire import created_answer, iso, list_item
from console.actors import is_agent, request_actor
from console.auth import IsAgent, IsReviewer
from console.errors import InvalidInput, pointer
from console.openapi import errors

LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX = 50, 200
BODY_KEYS = ("request", "meta")


def _encode_cursor(escalation: Escalation) -> str:
    raw = f"{escalation.created_at.isoformat()}|{escalation.pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, pk = raw.split("|", 1)
        at = datetime.fromisoformat(stamp)
        if at.tzinfo is None:
            raise ValueError("naive")
        # A forged time whose UTC value leaves years 1-9999 cannot be queried: OverflowError.
        return at.astimezone(UTC), str(UUID(pk))
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput(
            "Bad cursor.", fields={"/cursor": ["Not a cursor from this API."]}
        ) from None


def _status_filter(qs: QuerySet[Escalation], wanted: str, now: datetime) -> QuerySet[Escalation]:
    if wanted == "all":
        return qs
    if wanted not in EscalationStatus.values:
        allowed = ", ".join([*EscalationStatus.values, "all"])
        raise InvalidInput("Unknown status.", fields={"/status": [f"Use one of: {allowed}."]})
    pending = Q(status=EscalationStatus.PENDING)
    if wanted == EscalationStatus.PENDING:
        return qs.filter(pending, expires_at__gt=now)
    if wanted == EscalationStatus.EXPIRED:
        return qs.filter(Q(status=EscalationStatus.EXPIRED) | (pending & Q(expires_at__lte=now)))
    return qs.filter(status=wanted)


def _limit(raw: str | None) -> int:
    if raw is None:
        return LIST_LIMIT_DEFAULT
    try:
        # isdigit() also admits "²"; int() refuses that and 5000-digit strings.
        value = int(raw) if raw.isascii() and raw.isdigit() else 0
    except ValueError:
        value = 0
    if not 1 <= value <= LIST_LIMIT_MAX:
        raise InvalidInput("Bad limit.", fields={"/limit": [f"An integer 1-{LIST_LIMIT_MAX}."]})
    return value


class _AgentPostsReviewerReads(BasePermission):
    message = "POST takes an agent token; GET is for reviewers."

    def has_permission(self, request: Any, view: Any) -> bool:
        checker = IsAgent() if request.method == "POST" else IsReviewer()
        return checker.has_permission(request, view)


LIST_PARAMS = [
    OpenApiParameter("status", str, description="pending (default), approved, …, or all"),
    OpenApiParameter("agent", str, description="Agent slug"),
    OpenApiParameter("limit", int, description=f"1-{LIST_LIMIT_MAX}, default 50"),
    OpenApiParameter("cursor", str, description="next_cursor of the previous page"),
]


class EscalationCollectionApi(APIView):
    permission_classes = [_AgentPostsReviewerReads]

    @extend_schema(
        request=EscalationCreateSerializer,
        responses={
            201: EscalationCreatedSerializer,
            200: EscalationCreatedSerializer,
            **errors(400),
        },
        description=(
            "201: a new escalation; 200: the one already open for this context_identity. "
            "The console decides the approval rule from its own configuration: the strictest "
            "approval hook matching the tool (most approvals, shortest expiry). 400 when no "
            "approval hook matches and no asking hook is named, or a named hook does not "
            "apply to the call."
        ),
        examples=[ESCALATION_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        body = request.data
        if not isinstance(body, dict) or "request" not in body:
            message = "Send {'request': …, 'meta': {…}}."
            raise InvalidInput(message, fields={"/request": ["Required."]})
        unknown = sorted(set(body) - set(BODY_KEYS))
        if unknown:
            raise InvalidInput(
                f"Unknown key(s): {', '.join(unknown)}.",
                fields={pointer(key): ["Unknown key."] for key in unknown},
            )
        escalation, created = services.escalation_create(
            actor=request_actor(request), request=body["request"], meta=body.get("meta")
        )
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(created_answer(escalation), status=code)

    @extend_schema(parameters=LIST_PARAMS, responses={200: EscalationPageSerializer, **errors(400)})
    def get(self, request: Request) -> Response:
        now = timezone.now()
        params = request.query_params
        qs = escalations_visible_to(request.user).select_related("agent")
        qs = _status_filter(qs, params.get("status", EscalationStatus.PENDING), now)
        if params.get("agent"):
            qs = qs.filter(agent__slug=params["agent"])
        if params.get("cursor"):
            stamp, pk = _decode_cursor(params["cursor"])
            qs = qs.filter(Q(created_at__lt=stamp) | Q(created_at=stamp, pk__lt=pk))
        limit = _limit(params.get("limit"))
        page = list(qs.order_by("-created_at", "-id")[: limit + 1])
        more = len(page) > limit
        page = page[:limit]
        # Items carry tool arguments: no copy for the browser's history after a logout.
        return Response(
            {
                "items": [list_item(item, now=now) for item in page],
                "next_cursor": _encode_cursor(page[-1]) if more else None,
            },
            headers={"Cache-Control": "no-store"},
        )


class _ReviewerDecides(BasePermission):
    """Reviewers decide; agents never do, not even on their own escalations."""

    message = "Only reviewers may decide escalations."

    def has_permission(self, request: Any, view: Any) -> bool:
        if is_agent(request.user):
            self.message = "Agents never decide escalations, not even their own."
            return False
        return IsReviewer().has_permission(request, view)


class EscalationDecisionApi(APIView):
    permission_classes = [IsAuthenticated, _ReviewerDecides]

    @extend_schema(
        request=DecisionSerializer,
        responses={
            200: DecisionAnswerSerializer,
            **errors(400, 404, 409, _409="conflict: already decided, or expired"),
        },
        examples=[DECISION_EXAMPLE],
    )
    def post(self, request: Request, pk: str) -> Response:
        escalation = get_escalation_for_user(request.user, pk, write=True)
        outcome, reason, args = parse_decision(request.data)
        result = services.escalation_decide(
            escalation=escalation,
            actor=request_actor(request),
            outcome=outcome,
            reason=reason,
            args=args,
        )
        decided = result.escalation
        return Response(
            {
                "id": str(decided.pk),
                "status": decided.status,
                "final": result.final,
                "approvals_required": decided.approvals_required,
                "arguments_edited": decided.arguments_edited,
                "decided_by": decided.decided_by_label or None,
                "decided_at": iso(decided.decided_at),
            }
        )
