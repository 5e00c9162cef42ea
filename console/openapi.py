"""OpenAPI documentation shared by every app: the error shape as a component, a helper to
document an operation's own 4xx/5xx answers, and a schema post-processing hook that adds the
answers every operation can give (authentication, permission, negotiation, rate limit, and
for request bodies: malformed, length required, too large, unsupported media type).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

ERROR_DESCRIPTIONS = {
    400: "invalid: `fields` names each bad value by JSON pointer (or `malformed` for a body that does not parse)",
    401: "not_authenticated: no, an unknown or a revoked token",
    403: "forbidden: the caller's role or token kind may not do this",
    404: "not_found: no such object, or not visible to this caller",
    406: "not_acceptable: none of the Accept types can be produced",
    409: "conflict",
    411: "length_required: a body without Content-Length",
    413: "too_large: the body is over MAX_BODY_BYTES",
    415: "unsupported_media_type",
    429: "throttled: the agent token's rate limit; see Retry-After",
    503: "unavailable: retry after Retry-After seconds; nothing was stored",
}
EVERY_OPERATION = (401, 403, 406, 429)
WITH_BODY = (400, 411, 413, 415)


ErrorDetailSerializer = inline_serializer(
    name="ErrorDetail",
    fields={
        "code": serializers.CharField(),
        "message": serializers.CharField(),
        # A field named `fields` cannot be a class attribute of a serializer.
        "fields": serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()),
            help_text="Messages keyed by JSON pointer to the offending value ('' for the whole body).",
        ),
    },
)


class ErrorSerializer(serializers.Serializer[Any]):
    """`{"error": {"code", "message", "fields"}}`, the shape of every API error."""

    error = ErrorDetailSerializer


def errors(*codes: int, **described: str) -> dict[int, OpenApiResponse]:
    """Responses for an operation's own error statuses; `described` overrides a description
    by status (`_409="conflict: ..."`)."""
    out = {}
    for code in codes:
        text = described.get(f"_{code}", ERROR_DESCRIPTIONS[code])
        out[code] = OpenApiResponse(response=ErrorSerializer, description=text)
    return out


ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _media_types(operation: dict[str, Any]) -> list[str]:
    """Errors are JSON, or YAML where the operation also speaks YAML."""
    documented = {
        media
        for response in operation.get("responses", {}).values()
        for media in response.get("content") or {}
    }
    return ["application/json", *(["application/yaml"] if "application/yaml" in documented else [])]


def document_common_errors(result: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS: the error answers of every operation."""
    result.setdefault("components", {}).setdefault("schemas", {})
    if "Error" not in result["components"]["schemas"]:
        raise RuntimeError("No view documents the Error component; use console.openapi.errors.")
    for path in result.get("paths", {}).values():
        for method, operation in path.items():
            if method not in {"get", "put", "post", "patch", "delete"}:
                continue
            codes = list(EVERY_OPERATION)
            if "requestBody" in operation:
                codes += WITH_BODY
            responses = operation.setdefault("responses", {})
            media = _media_types(operation)
            for code in codes:
                responses.setdefault(
                    str(code),
                    {
                        "description": ERROR_DESCRIPTIONS[code],
                        "content": {item: {"schema": ERROR_REF} for item in media},
                    },
                )
            operation["responses"] = dict(sorted(responses.items()))
    return result


def close_request_objects(result: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS: every request object of this API refuses
    unknown keys (400 naming them), so its component says additionalProperties: false."""
    for name, schema in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and schema.get("type") == "object":
            schema["additionalProperties"] = False
    return result
