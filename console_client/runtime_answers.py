"""The console's answers in the hook output formats of other agent runtimes (the inputs
are read by console_client.runtimes): `answer(event, reply)` writes a `Reply` in the
runtime's own shape, and `failure(...)` is what `console-hook` prints and exits with when
the console cannot answer.

Pure Python, shared by the console's `POST /api/v1/hooks/{runtime}` and `console-hook`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from console_client.runtimes import (
    CLAUDE_CODE,
    CODEX,
    COPILOT,
    CURSOR,
    EVENTS,
    GEMINI_CLI,
    PRE,
    STOP,
    TEXT_MAX,
    Reply,
    RuntimeEvent,
)


def _cap(text: str) -> str:
    return text if len(text) <= TEXT_MAX else text[: TEXT_MAX - 1] + "…"


def _edit_problem(event: RuntimeEvent, updated: dict[str, Any]) -> str | None:
    """Why a reviewer's edited input cannot be handed to this runtime, or None."""
    if event.kind.edits == "none":
        return (
            f"A reviewer approved this call with edited arguments, which {event.runtime} "
            f"cannot apply at {event.native_event}; it does not run. Try again with the "
            "arguments the reviewer approved."
        )
    dropped = sorted(set(event.tool_input) - set(updated))
    if event.kind.edits == "merge" and dropped:
        return (
            f"A reviewer approved this call with arguments {', '.join(dropped)} removed, "
            f"which {event.runtime} cannot apply (it merges edits); it does not run."
        )
    return None


def answer(event: RuntimeEvent, reply: Reply) -> dict[str, Any]:
    """`reply` in the runtime's own hook output format ({} is "no objection")."""
    if reply.action == "allow" and reply.updated_input is not None:
        problem = _edit_problem(event, reply.updated_input)
        if problem:
            reply = Reply("deny", problem)
    if reply.action == "none" or not event.governed:
        return _no_objection(event)
    writer = _WRITERS[event.runtime]
    return writer(event, reply)


def _no_objection(event: RuntimeEvent) -> dict[str, Any]:
    if event.runtime == CURSOR and event.native_event == "beforeSubmitPrompt":
        return {"continue": True}
    return {}


def _claude(event: RuntimeEvent, reply: Reply) -> dict[str, Any]:
    """Claude Code and Codex CLI (the same hook output shape)."""
    text = _cap(reply.text)
    if event.event == PRE:
        specific: dict[str, Any] = {"hookEventName": event.native_event}
        if reply.action == "deny":
            specific.update(permissionDecision="deny", permissionDecisionReason=text)
        else:
            specific.update(
                permissionDecision="allow",
                permissionDecisionReason=text or "Approved in the governance console.",
            )
            if reply.updated_input is not None:
                specific["updatedInput"] = reply.updated_input
        return {"hookSpecificOutput": specific}
    if reply.action == "context":
        return {
            "hookSpecificOutput": {"hookEventName": event.native_event, "additionalContext": text}
        }
    return {"decision": "block", "reason": text}


def _gemini(event: RuntimeEvent, reply: Reply) -> dict[str, Any]:
    text = _cap(reply.text)
    if reply.action == "allow":
        out: dict[str, Any] = {"decision": "allow"}
        if reply.updated_input is not None:
            out["hookSpecificOutput"] = {
                "hookEventName": event.native_event,
                "tool_input": reply.updated_input,
            }
        return out
    if reply.action == "context":
        return {
            "hookSpecificOutput": {"hookEventName": event.native_event, "additionalContext": text}
        }
    # BeforeTool: the call is refused; AfterTool: the result is replaced by the reason;
    # AfterAgent: the reason becomes the next prompt.
    return {"decision": "deny", "reason": text}


def _cursor(event: RuntimeEvent, reply: Reply) -> dict[str, Any]:
    text = _cap(reply.text)
    if event.event == STOP:
        return {"followup_message": text}
    if reply.action == "deny":
        return {"permission": "deny", "user_message": text, "agent_message": text}
    out: dict[str, Any] = {"permission": "allow"}
    if reply.updated_input is not None:
        out["updated_input"] = reply.updated_input
    return out


def _copilot(event: RuntimeEvent, reply: Reply) -> dict[str, Any]:
    text = _cap(reply.text)
    if event.event == STOP:
        return {"decision": "block", "reason": text}
    if reply.action == "deny":
        return {"permissionDecision": "deny", "permissionDecisionReason": text}
    out: dict[str, Any] = {"permissionDecision": "allow"}
    if text:
        out["permissionDecisionReason"] = text
    if reply.updated_input is not None:
        out["modifiedArgs"] = reply.updated_input
    return out


_WRITERS = {
    CLAUDE_CODE: _claude,
    CODEX: _claude,
    GEMINI_CLI: _gemini,
    CURSOR: _cursor,
    COPILOT: _copilot,
}


# ---- when the console cannot answer (console-hook) ----------------------------------------


@dataclass(frozen=True)
class Failure:
    """What `console-hook` prints and exits with when the console cannot answer."""

    stdout: str
    stderr: str
    exit_code: int


def blocks_on_failure(runtime: str, native_event: str | None) -> bool:
    """Whether an unanswered event is blocked (fail closed): the pre-tool events."""
    kind = EVENTS.get(runtime, {}).get(native_event or "")
    return kind is not None and kind.event == PRE


def failure(runtime: str, native_event: str | None, reason: str, *, fail_open: bool) -> Failure:
    """Claude Code, Codex and Gemini CLI block on exit 2 with the reason on stderr; Cursor
    and Copilot read a deny from stdout (exit 0: Copilot ignores exit codes, and the
    generated Cursor command prints a deny of its own only when console-hook fails)."""
    message = f"console-hook: {reason}"
    if fail_open or not blocks_on_failure(runtime, native_event):
        return Failure("", message + " (not blocked)\n", 0)
    text = f"The governance console gave no answer ({reason}); the call is blocked."
    if runtime == COPILOT:
        body = {"permissionDecision": "deny", "permissionDecisionReason": text}
        return Failure(json.dumps(body), message + "\n", 0)
    if runtime == CURSOR:
        body = {"permission": "deny", "user_message": text, "agent_message": text}
        return Failure(json.dumps(body), message + "\n", 0)
    return Failure("", text + "\n", 2)
