"""Regular expressions that cannot hang the agent: RE2 (google-re2), a linear-time engine.

Two kinds of pattern reach console_client from people or models it does not control: hook
`matcher`s (written by admins, evaluated on every tool call against a tool name the model
chose) and the judge's `GrepSearch` patterns (chosen by the LLM, run over the transcript).
Python's `re` backtracks: `(a+)+$` takes exponential time, and it holds the interpreter
lock while it does, so no timeout can fire and the agent's event loop freezes. RE2 runs in
time linear in the input, bounds each compiled program's memory, and releases the
interpreter lock while it matches.

RE2 syntax is Python's without backreferences, lookaround, possessive quantifiers or
atomic groups; `\\Z` is written `\\z`. A pattern using them does not compile here: the
console refuses such matchers when they are saved (agents/validation.py uses
`matcher_error`), and the judge gets an error message instead of a search.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol, cast

import re2

# A compiled program may use at most this much memory; bigger patterns do not compile.
MAX_PROGRAM_BYTES = 8 << 20


class Pattern(Protocol):
    """What console_client uses of a compiled RE2 pattern (give it `subject(text)`)."""

    def search(self, text: bytes) -> Any: ...

    def fullmatch(self, text: bytes) -> Any: ...


def subject(text: str) -> bytes:
    """The text to match, as RE2 reads it (UTF-8; a lone surrogate becomes U+FFFD)."""
    return _utf8(text)


class PatternError(ValueError):
    """The pattern is not valid RE2 syntax (or its program is too large)."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error comes back as PatternError, not on stderr
    options.max_mem = MAX_PROGRAM_BYTES
    return options


def _utf8(text: str) -> bytes:
    """`text` as UTF-8; lone surrogates (JSON can carry them) become U+FFFD, not an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        repaired = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return repaired.encode("utf-8")


@lru_cache(maxsize=512)
def _compile(pattern: str) -> Pattern | str:
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        return "the pattern is not valid Unicode (it holds a lone surrogate)"
    try:
        return cast(Pattern, re2.compile(pattern, options=_options()))
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", errors="replace")
        return str(detail) or "invalid pattern"


def compile_pattern(pattern: str) -> Pattern:
    """The compiled pattern (cached), or PatternError with RE2's reason."""
    compiled = _compile(pattern)
    if isinstance(compiled, str):
        raise PatternError(compiled)
    return compiled


def pattern_error(pattern: str) -> str | None:
    """Why `pattern` does not compile, or None when it does."""
    compiled = _compile(pattern)
    return compiled if isinstance(compiled, str) else None


def matcher_error(matcher: str) -> str | None:
    """Why a hook matcher cannot be evaluated, or None. `*` (all tools) always can."""
    return None if matcher == "*" else pattern_error(matcher)


def matcher_matches(matcher: Any, tool_name: str) -> bool:
    """The whole tool name matches (`^(pattern)$`), case-sensitive; `*` matches
    every tool; an empty or null matcher, or one that does not compile, matches nothing."""
    if not isinstance(matcher, str) or matcher == "":
        return False
    if matcher == "*":
        return True
    compiled = _compile(matcher)
    if isinstance(compiled, str):
        return False
    return compiled.fullmatch(_utf8(tool_name)) is not None
