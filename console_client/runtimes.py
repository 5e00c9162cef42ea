"""The hook wire formats of other agent runtimes: Claude Code, Codex CLI, Gemini CLI, Cursor
and GitHub Copilot (README "Other agent runtimes" has the mapping table).

`parse(runtime, body, event=None)` reads a runtime's own hook input, verbatim, into a
`RuntimeEvent`: the console event it maps onto (PreToolUse, PostToolUse, Stop), or None for
an event the runtime sends that the console records but cannot govern, plus the session,
working directory and tool facts; `Reply` is the console's reply, which
console_client.runtime_answers writes in the runtime's own output format. Bad input raises
`RuntimeInputError`, with messages keyed by JSON pointer.

Pure Python, shared by the console's `POST /api/v1/hooks/{runtime}` and `console-hook`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

CLAUDE_CODE, CODEX, GEMINI_CLI, CURSOR, COPILOT = (
    "claude-code",
    "codex",
    "gemini-cli",
    "cursor",
    "copilot",
)
RUNTIMES = (CLAUDE_CODE, CODEX, GEMINI_CLI, CURSOR, COPILOT)
PRE, POST, STOP = "PreToolUse", "PostToolUse", "Stop"
# Runtimes cap the strings they read from hooks (Claude Code: 10,000 characters).
TEXT_MAX = 10_000
SESSION_ID_MAX = 200
NOT_GOVERNED = "console:not_governed"


class RuntimeInputError(ValueError):
    """The body is not this runtime's hook input; `fields` maps JSON pointers to messages."""

    def __init__(self, message: str, fields: dict[str, list[str]], *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        self.status = status


@dataclass(frozen=True)
class EventKind:
    """How one of a runtime's events maps: `event` is the console event it is governed as
    (None: recorded, never governed); `point` is the AGENT-HOOKS point of its record."""

    event: str | None
    point: str
    # Tool shape of the input: "tool" (tool_name + tool_input), or a Cursor special form.
    shape: str = "tool"
    # Whether an answer can carry a reviewer's edited input: "replace", "merge" or "none".
    edits: Literal["replace", "merge", "none"] = "none"


def _kind(
    event: str | None,
    point: str,
    shape: str = "tool",
    edits: Literal["replace", "merge", "none"] = "none",
) -> EventKind:
    return EventKind(event, point, shape, edits)


_CLAUDE_EVENTS = {
    "PreToolUse": _kind(PRE, "pre_tool_call", edits="replace"),
    "PostToolUse": _kind(POST, "post_tool_call"),
    "Stop": _kind(STOP, "output"),
    "PermissionRequest": _kind(None, "pre_tool_call"),
    "PostToolUseFailure": _kind(None, "post_tool_call"),
    "UserPromptSubmit": _kind(None, "input"),
    "SessionStart": _kind(None, "agent_startup"),
    "SessionEnd": _kind(None, "agent_shutdown"),
    "SubagentStop": _kind(None, "output"),
}
EVENTS: dict[str, dict[str, EventKind]] = {
    CLAUDE_CODE: _CLAUDE_EVENTS,
    CODEX: {
        "PreToolUse": _kind(PRE, "pre_tool_call", edits="replace"),
        "PostToolUse": _kind(POST, "post_tool_call"),
        "Stop": _kind(STOP, "output"),
        "PermissionRequest": _kind(None, "pre_tool_call"),
        "UserPromptSubmit": _kind(None, "input"),
        "SessionStart": _kind(None, "agent_startup"),
    },
    GEMINI_CLI: {
        "BeforeTool": _kind(PRE, "pre_tool_call", edits="merge"),
        "AfterTool": _kind(POST, "post_tool_call"),
        "AfterAgent": _kind(STOP, "output"),
        "BeforeAgent": _kind(None, "input"),
        "BeforeModel": _kind(None, "pre_model_call"),
        "AfterModel": _kind(None, "post_model_call"),
        "SessionStart": _kind(None, "agent_startup"),
        "SessionEnd": _kind(None, "agent_shutdown"),
    },
    CURSOR: {
        "preToolUse": _kind(PRE, "pre_tool_call", edits="replace"),
        "beforeShellExecution": _kind(PRE, "pre_tool_call", shape="shell"),
        "beforeMCPExecution": _kind(PRE, "pre_tool_call", shape="mcp"),
        "beforeReadFile": _kind(PRE, "pre_tool_call", shape="read"),
        "stop": _kind(STOP, "output"),
        "postToolUse": _kind(None, "post_tool_call"),
        "afterShellExecution": _kind(None, "post_tool_call", shape="shell"),
        "afterMCPExecution": _kind(None, "post_tool_call", shape="mcp"),
        "afterFileEdit": _kind(None, "post_tool_call", shape="edit"),
        "beforeSubmitPrompt": _kind(None, "input"),
        "afterAgentResponse": _kind(None, "output"),
        "sessionStart": _kind(None, "agent_startup"),
        "sessionEnd": _kind(None, "agent_shutdown"),
    },
    COPILOT: {
        "preToolUse": _kind(PRE, "pre_tool_call", edits="replace"),
        "PreToolUse": _kind(PRE, "pre_tool_call", edits="replace"),
        "agentStop": _kind(STOP, "output"),
        "Stop": _kind(STOP, "output"),
        "postToolUse": _kind(None, "post_tool_call"),
        "PostToolUse": _kind(None, "post_tool_call"),
        "postToolUseFailure": _kind(None, "post_tool_call"),
        "PostToolUseFailure": _kind(None, "post_tool_call"),
        "userPromptSubmitted": _kind(None, "input"),
        "UserPromptSubmit": _kind(None, "input"),
        "sessionStart": _kind(None, "agent_startup"),
        "SessionStart": _kind(None, "agent_startup"),
        "sessionEnd": _kind(None, "agent_shutdown"),
        "SessionEnd": _kind(None, "agent_shutdown"),
        "subagentStop": _kind(None, "output"),
        "SubagentStop": _kind(None, "output"),
    },
}
# The events the console's generated settings install, per runtime: (pre, post, stop).
GOVERNED_EVENTS: dict[str, tuple[str, ...]] = {
    CLAUDE_CODE: ("PreToolUse", "PostToolUse", "Stop"),
    CODEX: ("PreToolUse", "PostToolUse", "Stop"),
    GEMINI_CLI: ("BeforeTool", "AfterTool", "AfterAgent"),
    CURSOR: ("preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "stop"),
    COPILOT: ("preToolUse", "agentStop"),
}


@dataclass(frozen=True)
class RuntimeEvent:
    """One runtime hook input, read."""

    runtime: str
    native_event: str
    kind: EventKind
    session_id: str
    cwd: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_result: Any = None
    tool_failed: bool = False
    final_output: str = ""
    # True when the runtime says it is already continuing because a Stop hook blocked;
    # None when the runtime does not say (the console's own counter decides then).
    stop_hook_active: bool | None = None

    @property
    def event(self) -> str | None:
        return self.kind.event

    @property
    def governed(self) -> bool:
        return self.kind.event is not None


@dataclass(frozen=True)
class Reply:
    """The console's answer, before a runtime spells it.

    `action`: "none" (no objection), "deny" (PreToolUse: the call does not run; PostToolUse:
    its result is dropped), "allow" (PreToolUse approved by reviewers, with `updated_input`
    when they edited it), "context" (PostToolUse: `text` for the model), "continue" (Stop:
    the agent goes on with `text`).
    """

    action: Literal["none", "deny", "allow", "context", "continue"]
    text: str = ""
    updated_input: dict[str, Any] | None = None


NO_OBJECTION = Reply("none")


# ---- reading ------------------------------------------------------------------------------


def _error(pointer: str, message: str) -> RuntimeInputError:
    return RuntimeInputError(f"{message} ({pointer or '/'})", {pointer: [message]})


def _first(body: Mapping[str, Any], *names: str) -> tuple[str, Any]:
    for name in names:
        if name in body and body[name] is not None:
            return name, body[name]
    return names[0], None


def _text(body: Mapping[str, Any], *names: str, required: bool = False, limit: int = 0) -> str:
    name, value = _first(body, *names)
    if value is None:
        if required:
            raise _error(f"/{name}", f"{name} is required.")
        return ""
    if not isinstance(value, str):
        raise _error(f"/{name}", f"{name} must be a string.")
    if required and not value.strip():
        raise _error(f"/{name}", f"{name} must not be empty.")
    if limit and len(value) > limit:
        raise _error(f"/{name}", f"{name} must be at most {limit} characters.")
    return value


def _arguments(body: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """Tool arguments as an object; a JSON string (Cursor MCP, Copilot) is parsed first, and
    anything that is not an object is kept under "value"."""
    name, value = _first(body, *names)
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"value": value}
    if isinstance(value, dict):
        return value
    if isinstance(value, list | int | float | bool | str):
        return {"value": value}
    raise _error(f"/{name}", f"{name} must be a JSON object.")


def _event_name(runtime: str, body: Mapping[str, Any], hint: str | None) -> str:
    name, value = _first(body, "hook_event_name", "hookEventName")
    if value is None:
        value = hint
    if value is None:
        known = ", ".join(EVENTS[runtime])
        raise _error(
            "/hook_event_name",
            f"hook_event_name is required (or ?event=); {runtime} events: {known}.",
        )
    if not isinstance(value, str):
        raise _error(f"/{name}", f"{name} must be a string.")
    if value not in EVENTS[runtime]:
        known = ", ".join(EVENTS[runtime])
        raise _error(f"/{name}", f"Unknown {runtime} event {value!r}; known: {known}.")
    return value


def _cwd(body: Mapping[str, Any]) -> str:
    cwd = _text(body, "cwd")
    if cwd:
        return cwd[:1024]
    roots = body.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0][:1024]
    return ""


def _bool(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _error(f"/{name}", f"{name} must be true or false.")
    return value


def require_runtime(runtime: str) -> None:
    """RuntimeInputError (404) unless `runtime` is one the console speaks."""
    if runtime not in EVENTS:
        raise RuntimeInputError(
            f"Unknown runtime {runtime!r}; use one of {', '.join(RUNTIMES)}.",
            {"/runtime": [f"Use one of {', '.join(RUNTIMES)}."]},
            status=404,
        )


def parse(runtime: str, body: Any, event: str | None = None) -> RuntimeEvent:
    """Read one hook input of `runtime`. Raises RuntimeInputError naming the field."""
    require_runtime(runtime)
    if not isinstance(body, dict):
        raise _error("", "The body must be the runtime's hook input, a JSON object.")
    native = _event_name(runtime, body, event)
    kind = EVENTS[runtime][native]
    session_names = {
        CURSOR: ("conversation_id",),
        COPILOT: ("sessionId", "session_id"),
    }.get(runtime, ("session_id",))
    facts: dict[str, Any] = {
        "runtime": runtime,
        "native_event": native,
        "kind": kind,
        "session_id": _text(body, *session_names, required=True, limit=SESSION_ID_MAX),
        "cwd": _cwd(body),
    }
    if kind.point in ("pre_tool_call", "post_tool_call"):
        facts.update(_tool_facts(runtime, kind, body))
    if kind.point == "output":
        facts.update(_stop_facts(runtime, body))
    return RuntimeEvent(**facts)


def _tool_facts(runtime: str, kind: EventKind, body: Mapping[str, Any]) -> dict[str, Any]:
    # A governed event must name its tool; one that is only recorded may be sparse.
    required = kind.event is not None
    call_id = _text(body, "tool_use_id", "toolUseId", "generation_id") or uuid.uuid4().hex
    if kind.shape == "shell":
        command = _text(body, "command", required=required)
        return {
            "tool_name": "Shell",
            "tool_input": {"command": command, "cwd": _text(body, "cwd")},
            "tool_call_id": call_id,
        }
    if kind.shape in ("read", "edit"):
        # File content and edits are payload: hooks and reviewers get the path only.
        return {
            "tool_name": "Read" if kind.shape == "read" else "Edit",
            "tool_input": {"file_path": _text(body, "file_path", required=required)},
            "tool_call_id": call_id,
        }
    facts: dict[str, Any] = {
        "tool_name": _text(body, "tool_name", "toolName", required=required, limit=200),
        "tool_input": _arguments(body, "tool_input", "toolArgs"),
        "tool_call_id": call_id,
    }
    if kind.point == "post_tool_call":
        result = _first(body, "tool_response", "tool_result", "toolResult")[1]
        facts["tool_result"] = result
        facts["tool_failed"] = isinstance(result, dict) and bool(result.get("error"))
    return facts


def _stop_facts(runtime: str, body: Mapping[str, Any]) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "final_output": _text(body, "last_assistant_message", "prompt_response"),
    }
    if runtime == CURSOR:
        loops = body.get("loop_count")
        if loops is not None and (isinstance(loops, bool) or not isinstance(loops, int)):
            raise _error("/loop_count", "loop_count must be an integer.")
        facts["stop_hook_active"] = None if loops is None else loops > 0
    elif runtime != COPILOT:
        facts["stop_hook_active"] = _bool(body, "stop_hook_active")
    return facts
