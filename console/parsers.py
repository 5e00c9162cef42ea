"""The default JSON parser of the API.

Kept apart from `console.api`: DRF imports its default parser classes while `console.api`
is still importing DRF's views.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, parsers

TOO_DEEP = "The body is nested too deeply to be a document."


class JSONParser(parsers.JSONParser):
    """DRF's parser, except that a pathologically nested body is a 400, not a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(TOO_DEEP) from None
