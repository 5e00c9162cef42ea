"""The default JSON parser of the API.

Kept apart from `console.api`: DRF imports its default parser classes while `console.api`
is still importing DRF's views.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, parsers

TOO_DEEP = "The body is nested too deeply to be a document."


def ensure_encodable(data: Any) -> Any:
    """Refuse text that cannot be stored or answered as UTF-8 (JSON's lone "\\ud800").

    Iterative, and each container is visited once, so YAML aliases are never expanded.
    """
    seen: set[int] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise exceptions.ParseError(
                    "The body contains text that is not valid Unicode (a lone surrogate)."
                ) from None
        elif isinstance(item, dict | list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend([*item.keys(), *item.values()] if isinstance(item, dict) else item)
    return data


class JSONParser(parsers.JSONParser):
    """DRF's parser, except that a pathologically nested body or text that is not valid
    Unicode is a 400, not a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return ensure_encodable(super().parse(stream, media_type, parser_context))
        except RecursionError:
            raise exceptions.ParseError(TOO_DEEP) from None
