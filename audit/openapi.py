"""OpenAPI shapes of the records API (documentation only: audit.ingest validates each record
against the SDK's interception-record schema and the console's payload-free rules)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema_field
from rest_framework import serializers

from audit.dead_letters import ERROR_MAX, MAX_REPORTS
from audit.ingest import MAX_BATCH, META_KEYS
from audit.models import ExportFormat
from audit.record_fields import RECORD_FIELDS, Kind, RecordField


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "maxLength": META_KEYS["revision"]}, {"type": "integer"}],
        "nullable": True,
    }
)
class RevisionField(serializers.Field[Any, Any, Any, Any]):
    """A configuration revision: a string or an integer."""


class RecordMetaSerializer(serializers.Serializer[Any]):
    """Envelope facts only: never content, arguments, results or messages."""

    custom_agent = serializers.CharField(
        required=False, allow_null=True, max_length=META_KEYS["custom_agent"]
    )
    tool_name = serializers.CharField(
        required=False, allow_null=True, max_length=META_KEYS["tool_name"]
    )
    framework = serializers.CharField(
        required=False, allow_null=True, max_length=META_KEYS["framework"]
    )
    revision = RevisionField(required=False)


class RecordItemSerializer(serializers.Serializer[Any]):
    record = serializers.DictField(
        help_text="An InterceptionRecord wire; must pass agent_hooks' interception-record "
        "schema (payload-free)."
    )
    meta = RecordMetaSerializer(required=False, allow_null=True)


# 1..MAX_BATCH items: document_batch_bounds writes minItems/maxItems.
RECORD_BATCH = RecordItemSerializer(many=True)


class IngestAnswerSerializer(serializers.Serializer[Any]):
    accepted = serializers.IntegerField(help_text="Records stored by this request.")
    duplicates = serializers.IntegerField(help_text="Records already stored (idempotent retry).")


class DeadLetterReportSerializer(serializers.Serializer[Any]):
    """One record batch the console refused, as the agent's dead-letter file holds it."""

    batch = serializers.RegexField(r"^[A-Za-z0-9._-]{1,64}$", help_text="The agent's batch id.")
    records = serializers.IntegerField(min_value=1, max_value=MAX_BATCH)
    status = serializers.IntegerField(min_value=400, max_value=499)
    error = serializers.CharField(
        required=False, allow_blank=True, max_length=ERROR_MAX, help_text="The refusal."
    )
    refused_at = serializers.DateTimeField()


# 1..MAX_REPORTS items: document_batch_bounds writes minItems/maxItems.
DEAD_LETTER_REPORTS = DeadLetterReportSerializer(many=True)


def _api_field(field: RecordField) -> serializers.Field[Any, Any, Any, Any]:
    """The OpenAPI type of one record field (audit.record_fields)."""
    described: dict[str, Any] = {"help_text": field.help_text} if field.help_text else {}
    if field.choices is not None:
        return serializers.ChoiceField(choices=field.choices.values, **described)
    if field.kind in (Kind.BIGINT, Kind.INTEGER):
        return serializers.IntegerField(allow_null=field.null, **described)
    if field.kind == Kind.TEXT:
        return serializers.CharField(allow_blank=field.blank, allow_null=field.null, **described)
    if field.kind == Kind.BOOLEAN:
        return serializers.BooleanField(allow_null=field.null, **described)
    if field.kind == Kind.DATETIME:
        return serializers.DateTimeField(allow_null=field.null, **described)
    if field.kind == Kind.TEXT_LIST:
        return serializers.ListField(child=serializers.CharField(), **described)
    return serializers.DictField(**described)


# A record as the search API returns it: the fields of audit.record_fields, in its order.
class RecordSerializer(serializers.Serializer[Any]):
    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return {field.name: _api_field(field) for field in RECORD_FIELDS}


class RecordPageSerializer(serializers.Serializer[Any]):
    results = RecordSerializer(many=True)
    next = serializers.URLField(allow_null=True, help_text="The next page, or null.")


class ExportManifestSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    format = serializers.ChoiceField(choices=ExportFormat.choices)
    filter = serializers.DictField(child=serializers.CharField())
    generated_at = serializers.DateTimeField()
    complete = serializers.BooleanField(
        help_text="The stream produced every byte; false while it runs or if it broke off."
    )
    completed_at = serializers.DateTimeField(allow_null=True)
    rows = serializers.IntegerField(allow_null=True, help_text="Records in the body.")
    bytes = serializers.IntegerField(allow_null=True, help_text="Size of the body in bytes.")
    sha256 = serializers.CharField(
        allow_null=True, help_text="SHA-256 (hex) of exactly the bytes of the body."
    )


# One pre_tool_call record as the SDK's InterceptionEmitter hands it to its record_sink.
RECORDS_EXAMPLE = OpenApiExample(
    "one allowed tool call",
    request_only=True,
    # drf-spectacular wraps the example of a many=True body in a list itself.
    value={
        "record": {
            "interception_point": "pre_tool_call",
            "mode": "enforce",
            "verdict": {"decision": "allow"},
            "input_identity": (
                "sha256:14468b19fc8288594209c59168f8d4eb41d58e3efe3905ae3d081747e5224f2e"
            ),
            "enforced_identity": (
                "sha256:14468b19fc8288594209c59168f8d4eb41d58e3efe3905ae3d081747e5224f2e"
            ),
            "identity_provider": "jcs-sha256",
            "session_id": "sess-example",
            "sequence": 2,
            "decided_by": None,
            "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
            "timestamp": "2026-11-30T06:51:49.382423Z",
            "verdicts": [
                {"index": 0, "decision": "allow", "name": "hk_guard0001"},
                {"index": 1, "decision": "allow", "name": "hk_audit0002"},
            ],
            "fold_truncated": False,
            "interceptors_registered": 2,
        },
        "meta": {"tool_name": "ls", "framework": "agent_framework", "revision": 3},
    },
)


def document_batch_bounds(result: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS: the records batch holds 1 to MAX_BATCH items,
    the dead-letter reports 1 to MAX_REPORTS."""
    bounds = {"/api/v1/records": MAX_BATCH, "/api/v1/records/dead-letters": MAX_REPORTS}
    for path, most in bounds.items():
        body = result["paths"][path]["post"]["requestBody"]
        for media in body["content"].values():
            media["schema"].update({"minItems": 1, "maxItems": most})
    return result
