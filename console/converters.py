"""URL converters shared by the apps' urls.py."""

from __future__ import annotations

from urllib.parse import unquote

_DOT_SEGMENTS = {".": "%2E", "..": "%2E%2E"}


class AnyTextConverter:
    """Any string (empty included) as exactly ONE path segment: a value the console does not
    choose, such as a session id an agent sent.

    `reverse()` / `{% url %}` leave `/` and dot segments alone, so a session id of
    `../../agents/` would link to /agents/. Here `%` and `/` are percent-encoded and a value
    of `.` or `..` becomes `%2E`/`%2E%2E`; Django then quotes the URL (`%` → `%25`) and
    the server decodes it once before resolving, so `to_python` decodes the second level.
    Ordinary ids keep their readable URL (`/audit/sessions/sess-1/`). The empty id is the
    empty segment (`/audit/sessions//`).
    """

    regex = "[^/]*"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value: str) -> str:
        encoded = value.replace("%", "%25").replace("/", "%2F")
        return _DOT_SEGMENTS.get(encoded, encoded)
