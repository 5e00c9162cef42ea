"""Parsing what a hook answers.

Two forms are accepted, as a single JSON object (a ```json fence around it is tolerated):

- simple: `{"ok": true}` / `{"ok": false, "reason": "..."}`
- extended: `{"decision": "allow"|"block"|"ask", "reason": "...",
  "hookSpecificOutput": {"additionalContext": "..."}}` (`ask` only at PreToolUse; a
  `hookSpecificOutput` without a decision means allow).

Anything else raises `HookOutputError`, which the runners turn into a hook error decided by
the hook's failMode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from console_client.results import HookDecision

_FENCE = "```"
_FENCE_TAGS = ("json", "JSON")
_DECISIONS: dict[str, HookDecision] = {"allow": "allow", "block": "block", "ask": "ask"}


class HookOutputError(ValueError):
    """The hook's answer is not one of the accepted forms."""


@dataclass(frozen=True)
class HookOutput:
    """A parsed answer, before the runner applies the event rules."""

    decision: HookDecision
    reason: str = ""
    additional_context: str | None = None


def strip_fence(text: str) -> str:
    """The body of the first ```json fence in `text`, or `text` itself when there is none.

    Plain string search, linear in the text: a backtracking pattern for this takes cubic
    time on a fence followed by blanks, and a hook's stdout (or a judge's answer) is
    untrusted and up to a MiB."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return stripped
    opening = stripped.find(_FENCE)
    if opening < 0:
        return stripped
    body_start = opening + len(_FENCE)
    if stripped.startswith(_FENCE_TAGS, body_start):
        body_start += len(_FENCE_TAGS[0])
    closing = stripped.find(_FENCE, body_start)
    if closing < 0:
        return stripped
    return stripped[body_start:closing].strip()


def parse_hook_output(text: str, *, event: str | None = None) -> HookOutput:
    """Parse a hook's stdout (or a judge's final message) into a decision."""
    body = strip_fence(text)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise HookOutputError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(value, dict):
        raise HookOutputError(f"expected a JSON object, got {type(value).__name__}")
    additional_context = _additional_context(value)
    reason = _reason(value)
    if "decision" in value:
        raw = value["decision"]
        decision = _DECISIONS.get(raw) if isinstance(raw, str) else None
        if decision is None:
            raise HookOutputError(f"decision must be 'allow', 'block' or 'ask', got {raw!r}")
        if decision == "ask" and event not in (None, "PreToolUse"):
            raise HookOutputError(f"decision 'ask' is only valid for PreToolUse hooks, not {event}")
        return HookOutput(decision, reason, additional_context)
    if "ok" in value:
        ok = value["ok"]
        if not isinstance(ok, bool):
            raise HookOutputError(f"ok must be true or false, got {ok!r}")
        return HookOutput("allow" if ok else "block", reason, additional_context)
    if "hookSpecificOutput" in value:
        return HookOutput("allow", reason, additional_context)
    raise HookOutputError("the object has neither 'ok' nor 'decision'")


def _reason(value: dict[str, Any]) -> str:
    reason = value.get("reason")
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise HookOutputError(f"reason must be a string, got {type(reason).__name__}")
    return reason.strip()


def _additional_context(value: dict[str, Any]) -> str | None:
    specific = value.get("hookSpecificOutput")
    if specific is None:
        return None
    if not isinstance(specific, dict):
        raise HookOutputError("hookSpecificOutput must be an object")
    context = specific.get("additionalContext")
    if context is None:
        return None
    if not isinstance(context, str):
        raise HookOutputError("hookSpecificOutput.additionalContext must be a string")
    return context
