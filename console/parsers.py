"""The default JSON parser of the API.

Kept apart from `console.api`: DRF imports its default parser classes while `console.api`
is still importing DRF's views.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, parsers

TOO_DEEP = "The body is nested too deeply to be a document."


def _refuse(path: list[str | int], message: str) -> Exception:
    from console.api import ApiError  # console.api imports this module

    pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)
    return ApiError("The body contains text that cannot be stored.", fields={pointer: [message]})


def _text_problem(text: str, what: str) -> str | None:
    if "\x00" in text:
        return f"{what} must not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} is not valid Unicode (a lone surrogate)."
    return None


def ensure_storable(data: Any) -> Any:
    """Refuse, by JSON pointer, text PostgreSQL cannot store or UTF-8 cannot carry: NUL
    characters and JSON's lone surrogates ("\\ud800"), in values and in keys alike.

    Iterative, and each container is visited once, so YAML aliases are never expanded.
    """
    seen: set[int] = set()
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            what = path[-1] if path and isinstance(path[-1], str) else "Text"
            problem = _text_problem(item, str(what))
            if problem:
                raise _refuse(path, problem)
        elif isinstance(item, dict) and id(item) not in seen:
            seen.add(id(item))
            for key, value in item.items():
                if isinstance(key, str) and _text_problem(key, "key"):
                    raise _refuse(path, "Field names must be valid Unicode without NUL.")
                stack.append((value, [*path, key]))
        elif isinstance(item, list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend((value, [*path, index]) for index, value in enumerate(item))
    return data


class JSONParser(parsers.JSONParser):
    """DRF's parser, except that a pathologically nested body, or text the database cannot
    store, is a 400 rather than a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return ensure_storable(super().parse(stream, media_type, parser_context))
        except RecursionError:
            raise exceptions.ParseError(TOO_DEEP) from None
