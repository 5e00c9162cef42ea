"""OpenAPI shapes of the escalations API (documentation only: approvals.validation checks
requests against the SDK's own approval schema), and the schema hook that documents the
agent's long-poll, an async Django view drf-spectacular cannot see by itself.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, inline_serializer
from rest_framework import serializers

from approvals.models import EscalationStatus, VoteOutcome
from approvals.validation import META_TEXT_LIMITS, REASON_MAX_CHARS

STATUSES = EscalationStatus.values


# The SDK's approval request wire (agent_hooks approval.schema.json `$defs/request`); a
# field named `context` cannot be a class attribute of a serializer.
ApprovalRequestSerializer = inline_serializer(
    name="ApprovalRequest",
    fields={
        "context_identity": serializers.CharField(
            allow_null=True, allow_blank=True, max_length=512
        ),
        "interception_point": serializers.CharField(),
        "verdict": serializers.DictField(help_text="The escalate verdict wire."),
        "context": serializers.DictField(required=False),
    },
)


class EscalationMetaSerializer(serializers.Serializer[Any]):
    custom_agent = serializers.CharField(
        required=False, max_length=META_TEXT_LIMITS["custom_agent"]
    )
    hook = serializers.CharField(required=False, max_length=META_TEXT_LIMITS["hook"])
    tool_name = serializers.CharField(required=False, max_length=META_TEXT_LIMITS["tool_name"])
    session_id = serializers.CharField(required=False, max_length=META_TEXT_LIMITS["session_id"])
    turn = serializers.IntegerField(required=False, min_value=0)
    transcript = serializers.CharField(required=False)
    tool_schema = serializers.DictField(required=False)
    framework = serializers.CharField(required=False, max_length=META_TEXT_LIMITS["framework"])
    revision = serializers.IntegerField(required=False, min_value=0)


class EscalationCreateSerializer(serializers.Serializer[Any]):
    request = ApprovalRequestSerializer
    meta = EscalationMetaSerializer(required=False, allow_null=True)


class EscalationCreatedSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=STATUSES)
    expires_at = serializers.DateTimeField()


class EscalationItemSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=STATUSES)
    agent = serializers.CharField()
    custom_agent = serializers.CharField(allow_null=True)
    interception_point = serializers.CharField()
    tool_name = serializers.CharField(allow_null=True)
    arguments = serializers.DictField(allow_null=True)
    hook = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    message = serializers.CharField(allow_null=True)
    session_id = serializers.CharField(allow_null=True)
    turn = serializers.IntegerField(allow_null=True)
    approvals_required = serializers.IntegerField()
    approvals = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = serializers.CharField(allow_null=True)
    arguments_edited = serializers.BooleanField()
    payload_purged = serializers.BooleanField()


class EscalationPageSerializer(serializers.Serializer[Any]):
    items = EscalationItemSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class DecisionSerializer(serializers.Serializer[Any]):
    outcome = serializers.ChoiceField(choices=VoteOutcome.values)
    reason = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=REASON_MAX_CHARS
    )
    args = serializers.DictField(
        required=False,
        help_text="Edited tool arguments (approve only; checked against the tool schema).",
    )


class DecisionAnswerSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=STATUSES)
    final = serializers.BooleanField(help_text="false: the vote counted, more approvals needed.")
    approvals_required = serializers.IntegerField()
    arguments_edited = serializers.BooleanField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


DATETIME = {"type": "string", "format": "date-time"}
# The long-poll answer (approvals.wire.status_answer); the resolution is the SDK's wire.
ESCALATION_STATUS = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "status": {"type": "string", "enum": STATUSES},
        "resolution": _nullable(
            {
                "type": "object",
                "description": "The SDK's approval resolution wire; null while pending.",
                "properties": {
                    "outcome": {"type": "string", "enum": ["approve", "reject"]},
                    "context_identity": _nullable({"type": "string"}),
                    "verdict": {"type": "object", "additionalProperties": {}},
                },
                "required": ["outcome", "context_identity"],
            }
        ),
        "decided_by": _nullable({"type": "string"}),
        "decided_at": _nullable(DATETIME),
        "reason": _nullable({"type": "string"}),
        "expires_at": DATETIME,
    },
    "required": ["id", "status", "resolution", "decided_by", "decided_at", "reason", "expires_at"],
}
# Built by the SDK (AgentContextBuilder.pre_tool_call + Verdict.escalate); the identity is
# the jcs-sha256 of the context.
ESCALATION_EXAMPLE = OpenApiExample(
    "restart_service needs approval",
    request_only=True,
    value={
        "request": {
            "context_identity": (
                "sha256:3a35369ed3369d67a86c637d091d67a963b370e5b7d685294a0670c3b6e41fbb"
            ),
            "interception_point": "pre_tool_call",
            "verdict": {
                "decision": "deny",
                "reason": "approval_required",
                "message": "restart_service needs approval",
                "approval": {},
            },
            "context": {
                "spec": "agent-hooks/0.1",
                "interception_point": "pre_tool_call",
                "timestamp": "2026-11-30T06:51:49.381246Z",
                "sequence": 1,
                "agent": {"id": "sre-agent", "framework": "agent_framework"},
                "session": {"id": "sess-example"},
                "target": {"service": "api"},
                "tool_call": {
                    "id": "call-1",
                    "name": "restart_service",
                    "args": {"service": "api"},
                },
            },
        },
        "meta": {"tool_name": "restart_service", "framework": "agent_framework"},
    },
)
DECISION_EXAMPLE = OpenApiExample(
    "approve", request_only=True, value={"outcome": "approve", "reason": "Looks safe."}
)

LONGPOLL_PATH = "/api/v1/escalations/{id}"


def document_longpoll(result: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS: `GET /api/v1/escalations/{id}?wait=N`."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["EscalationStatus"] = ESCALATION_STATUS
    answer = {"$ref": "#/components/schemas/EscalationStatus"}
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    result["paths"][LONGPOLL_PATH] = {
        "get": {
            "operationId": "v1_escalations_status",
            "summary": "The agent's long-poll for its escalation's decision",
            "description": (
                "Waits up to `wait` seconds (capped by CONSOLE_LONGPOLL_MAX_SECONDS) and "
                "answers as soon as the escalation is decided, expired or cancelled. "
                "Agent tokens only, and only for the token's own escalations."
            ),
            "tags": ["v1"],
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                {
                    "name": "wait",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "number", "minimum": 0},
                    "description": "Seconds to wait for a decision (default 0).",
                },
            ],
            "security": [{"bearerToken": []}],
            "responses": {
                "200": {"description": "", "content": {"application/json": {"schema": answer}}},
                "400": {"description": "invalid: a bad wait", "content": error},
                "404": {"description": "not_found", "content": error},
            },
        }
    }
    result["paths"] = dict(sorted(result["paths"].items()))
    return result
