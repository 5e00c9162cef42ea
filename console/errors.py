"""Domain errors: what the console refuses, and why, said once.

Services, parsers and validators raise a `DomainError` (one of the subclasses below, by the
answer it calls for); nothing downstream translates it by hand. It is answered

- by the API's exception handler (`console.api.exception_handler`) and, for the plain
  Django views under /api/ (the long-poll, runtime hooks, Slack), by
  `console.middleware.DomainErrorMiddleware`, as
  `{"error": {"code": str, "message": str, "fields": {pointer: [str]}}}`;
- in the portal by the same middleware, as a styled error page (for htmx, swapped into the
  page), unless the view shows it itself: on a form (`ProblemsForm.add_problems` in
  agents.forms), on the reviewer's row or in a flash message.

`fields` are keyed by JSON pointer (RFC 6901), built with `pointer`, the one encoder.
"""

from __future__ import annotations

from typing import Any, ClassVar

Fields = dict[str, list[str]]


def pointer(*parts: str | int) -> str:
    """The JSON pointer of a path: `pointer("spec", "hooks", "a/b")` is `/spec/hooks/a~1b`."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def error_body(code: str, message: str, fields: Fields | None = None) -> dict[str, Any]:
    """The API's error shape."""
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


class DomainError(Exception):
    """A refusal: `message` for people, `fields` naming each bad value by JSON pointer,
    `code` and `status` for the API (each subclass has its own), `headers` to send along."""

    status: int = 400
    code: str = "invalid"
    default_headers: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        message: str,
        *,
        fields: Fields | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        # The caller's dict itself: a service may add to it while the error travels up.
        self.fields: Fields = fields if fields is not None else {}
        if code is not None:
            self.code = code
        self.headers = {**self.default_headers, **(headers or {})}

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.fields)


class InvalidInput(DomainError):
    """400: the input is refused (nothing was written). `warnings` ride along for forms."""

    def __init__(
        self,
        message: str,
        *,
        fields: Fields | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        warnings: Fields | None = None,
    ) -> None:
        super().__init__(message, fields=fields, code=code, headers=headers)
        self.warnings: Fields = warnings or {}


class NotAuthenticated(DomainError):
    status = 401
    code = "not_authenticated"
    default_headers = {"WWW-Authenticate": "Bearer"}


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class MethodNotAllowed(DomainError):
    status = 405
    code = "method_not_allowed"


class Conflict(DomainError):
    """409: the state changed under the caller (already decided, expired, changed)."""

    status = 409
    code = "conflict"


class TooLarge(DomainError):
    status = 413
    code = "too_large"


class UnsupportedMediaType(DomainError):
    status = 415
    code = "unsupported_media_type"


class Unavailable(DomainError):
    """503: a store the request needs is down; nothing was written, retry later."""

    status = 503
    code = "unavailable"
