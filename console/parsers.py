"""Parsing request documents (JSON and YAML) into plain data, within bounds.

One place for every caller: the API's parsers, the portal's import and YAML editor.
- Numbers: an integer literal of more than NUMBER_MAX_DIGITS digits, or a float that is not
  finite (`1e999`, `.inf`, `NaN`), is never built; it becomes an `UnusableNumber`, which
  `ensure_storable` refuses by JSON pointer (Python cannot convert a 5,000-digit integer,
  PostgreSQL's json cannot hold infinity).
- YAML aliases and merge keys: the composed node graph is measured as if every alias were
  expanded, before anything is constructed; past DOCUMENT_MAX_NODES nodes or
  DOCUMENT_MAX_CHARS characters of text, or when an alias contains itself, it is refused.
- Text PostgreSQL cannot store (NUL, lone surrogates) is refused by JSON pointer.

Kept apart from `console.api`: DRF imports its default parser classes while `console.api`
is still importing DRF's views.
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

import yaml
from django.conf import settings
from rest_framework import exceptions, parsers

from console.errors import InvalidInput, pointer

TOO_DEEP = "The body is nested too deeply to be a document."
NUMBER_MAX_DIGITS = 1000
# A v2 document at every limit (3 events x 100 hooks, ~25 nodes each) is ~7,600 nodes.
DOCUMENT_MAX_NODES = 20_000
DOCUMENT_MAX_CHARS = 2 * 1024 * 1024


class UnusableNumber:
    """Stands where a number too long or not finite was written; never stored."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"UnusableNumber({self.problem!r})"


def _too_long(digits: int) -> UnusableNumber:
    return UnusableNumber(
        f"A number of {digits} digits is too long; numbers may have at most "
        f"{NUMBER_MAX_DIGITS} digits."
    )


NOT_FINITE = UnusableNumber("Must be a finite number (not infinity or NaN).")


def _json_int(text: str) -> int | UnusableNumber:
    digits = len(text) - (text[0] == "-")
    return _too_long(digits) if digits > NUMBER_MAX_DIGITS else int(text)


def _json_float(text: str) -> float | UnusableNumber:
    if len(text) > NUMBER_MAX_DIGITS + 8:  # digits, '.', 'e', signs and an exponent
        return _too_long(len(text))
    value = float(text)
    return value if math.isfinite(value) else NOT_FINITE


def _json_constant(name: str) -> UnusableNumber:
    return NOT_FINITE  # NaN, Infinity, -Infinity: not JSON


def json_loads(text: str | bytes) -> Any:
    """`json.loads` that builds no unusable number; ValueError on malformed JSON."""
    return json.loads(
        text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant
    )


class BoundedYAMLLoader(yaml.SafeLoader):
    """PyYAML's safe loader, bounded: numbers as `json_loads` builds them, and the composed
    document measured, aliases expanded, before it is constructed."""

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)

    def construct_bounded_int(self, node: yaml.ScalarNode) -> int | UnusableNumber:
        text = str(self.construct_scalar(node)).replace("_", "")
        if len(text.lstrip("+-")) > NUMBER_MAX_DIGITS:
            return _too_long(len(text.lstrip("+-")))
        value: int = self.construct_yaml_int(node)
        return value

    def construct_bounded_float(self, node: yaml.ScalarNode) -> float | UnusableNumber:
        text = str(self.construct_scalar(node))
        if len(text) > NUMBER_MAX_DIGITS + 8:
            return _too_long(len(text))
        try:
            value: float = self.construct_yaml_float(node)
        except OverflowError:  # sexagesimal 1:2:3:... past a float's range
            return NOT_FINITE
        return value if math.isfinite(value) else NOT_FINITE


BoundedYAMLLoader.add_constructor("tag:yaml.org,2002:int", BoundedYAMLLoader.construct_bounded_int)
BoundedYAMLLoader.add_constructor(
    "tag:yaml.org,2002:float", BoundedYAMLLoader.construct_bounded_float
)


def _check_expansion(root: yaml.Node) -> None:
    """Nodes and text characters of the document with every alias expanded, counted on the
    node graph (each node once, memoized), so a billion laughs costs what its text costs."""
    sizes: dict[int, tuple[int, int]] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [item for pair in node.value for item in pair]
        if not children_done:
            if key in open_nodes:
                raise InvalidInput(
                    "The YAML document refers to itself: an alias inside the node it names."
                )
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(key)
        nodes = 1 + sum(sizes[id(child)][0] for child in children)
        chars = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
        chars += sum(sizes[id(child)][1] for child in children)
        if nodes > DOCUMENT_MAX_NODES or chars > DOCUMENT_MAX_CHARS:
            raise InvalidInput(
                "The YAML document is too large once its aliases are expanded: the limit is "
                f"{DOCUMENT_MAX_NODES} values and {DOCUMENT_MAX_CHARS} characters of text."
            )
        sizes[key] = (nodes, chars)


def yaml_loads(text: str) -> Any:
    """One YAML document, bounded; yaml.YAMLError when malformed, InvalidInput when too
    large or self-referential."""
    return yaml.load(text, Loader=BoundedYAMLLoader)  # noqa: S506 (a SafeLoader subclass)


def _text_problem(text: str, what: str) -> str | None:
    if "\x00" in text:
        return f"{what} must not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} is not valid Unicode (a lone surrogate)."
    return None


def ensure_storable(data: Any, *, check_text: bool = True) -> Any:
    """Refuse, by JSON pointer, what PostgreSQL cannot store or UTF-8 cannot carry: NUL
    characters and JSON's lone surrogates ("\\ud800"), in values and in keys alike (unless
    the caller checks text itself), and the numbers the loaders above left unbuilt. Raises
    InvalidInput for the first one in document order.

    Iterative, and each container is visited once, so YAML aliases are never expanded.
    """
    seen: set[int] = set()
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and check_text:
            what = path[-1] if path and isinstance(path[-1], str) else "Text"
            problem = _text_problem(item, str(what))
            if problem:
                raise InvalidInput(
                    "The body contains text that cannot be stored.",
                    fields={pointer(*path): [problem]},
                )
        elif isinstance(item, UnusableNumber):
            raise InvalidInput(
                "The body contains a number that cannot be used.",
                fields={pointer(*path): [item.problem]},
            )
        elif isinstance(item, dict) and id(item) not in seen:
            seen.add(id(item))
            for key in item:
                if check_text and isinstance(key, str) and _text_problem(key, "key"):
                    raise InvalidInput(
                        "The body contains text that cannot be stored.",
                        fields={pointer(*path): ["Field names must be valid Unicode without NUL."]},
                    )
                if isinstance(key, UnusableNumber):
                    raise InvalidInput(
                        "The body contains a number that cannot be used.",
                        fields={pointer(*path): [f"A field name: {key.problem}"]},
                    )
            stack.extend((value, [*path, key]) for key, value in reversed(item.items()))
        elif isinstance(item, list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend((item[index], [*path, index]) for index in reversed(range(len(item))))
    return data


class JSONParser(parsers.JSONParser):
    """DRF's parser, except that a pathologically nested body, an unusable number, or text
    the database cannot store is a 400 naming the field rather than a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return ensure_storable(json_loads(codecs.getreader(encoding)(stream).read()))
        except RecursionError:
            raise exceptions.ParseError(TOO_DEEP) from None
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None


class YAMLParser(parsers.BaseParser):
    media_type = "application/yaml"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return ensure_storable(yaml_loads(stream.read().decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"Body is not UTF-8: {exc}") from None
        except yaml.YAMLError as exc:
            raise exceptions.ParseError(f"Malformed YAML: {exc}") from None
        except RecursionError:
            raise exceptions.ParseError(TOO_DEEP) from None


class YAMLAliasParser(YAMLParser):
    """`application/x-yaml` and `text/yaml` are common spellings clients send."""

    media_type = "application/x-yaml"


class TextYAMLParser(YAMLParser):
    media_type = "text/yaml"


YAML_PARSERS = [YAMLParser, YAMLAliasParser, TextYAMLParser]
