"""The API's exception handler, the one mapping of errors to answers (a `DomainError`
by its status, code and fields; DRF's and Django's own exceptions into the same shape), and
the YAML renderer. The parsers are in console.parsers.

Every API error is `{"error": {"code": str, "message": str, "fields": {pointer: [str]}}}`,
with fields keyed by JSON pointer (`/spec/hooks/PostToolUse/0/timeout`).
"""

from __future__ import annotations

from typing import Any

import yaml
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from console.errors import DomainError, error_body, pointer


def _flatten_drf_detail(detail: Any, path: list[str | int], out: dict[str, list[str]]) -> None:
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                _flatten_drf_detail(value, path, out)
            else:
                _flatten_drf_detail(value, [*path, key], out)
    elif isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            out.setdefault(pointer(*path), []).extend(str(item) for item in detail)
        else:
            for index, item in enumerate(detail):
                _flatten_drf_detail(item, [*path, index], out)
    else:
        out.setdefault(pointer(*path), []).append(str(detail))


_CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "throttled",
    503: "unavailable",
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        return Response(exc.body(), status=exc.status, headers=exc.headers)
    if isinstance(exc, RequestDataTooBig):
        return Response(
            error_body("too_large", "Request body is too large."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = _CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ParseError):
        code = "malformed"
    if isinstance(exc, exceptions.ValidationError):
        fields: dict[str, list[str]] = {}
        _flatten_drf_detail(exc.detail, [], fields)
        response.data = error_body(code, "The request is invalid.", fields)
    else:
        detail = getattr(exc, "detail", None)
        response.data = error_body(code, str(detail) if detail is not None else str(exc))
    return response


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings (prompts, scripts) as `|` blocks, as the source documents write them."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_LiteralDumper.add_representer(str, _str_representer)


def yaml_dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_LiteralDumper, sort_keys=False, allow_unicode=True, width=100)


class YAMLRenderer(BaseRenderer):
    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        return yaml_dump(data).encode("utf-8")
