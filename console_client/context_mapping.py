"""From an AGENT-HOOKS context (the SDK's wire shape) to the context a hook receives.

Every hook gets `hook_event_name`, `agent_name`, `current_turn`, `max_turns` and
`execution_summary` (the transcript's path); Stop adds `final_output`, `stop_hook_active`
and `stop_rejection_count`; PostToolUse adds `tool_name`, `tool_input`, `tool_result` and
`tool_succeeded`; PreToolUse adds `tool_name` and `tool_input`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Re-exported: the matcher rule lives with the linear-time engine.
from console_client.patterns import matcher_matches as matcher_matches

EVENT_BY_POINT = {"output": "Stop", "post_tool_call": "PostToolUse", "pre_tool_call": "PreToolUse"}
TOOL_EVENTS = ("PostToolUse", "PreToolUse")


@dataclass(frozen=True)
class TurnFacts:
    """What the client knows about the run beside the SDK context."""

    agent_name: str
    current_turn: int
    max_turns: int
    transcript_path: str
    stop_rejection_count: int = 0


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text") or "")
        return ""
    if isinstance(content, list):
        return "".join(_text_of(item) for item in content)
    return ""


def final_text(output_content: Any) -> str:
    """The final answer's text from an `output` target: a string, or the message list
    (the last assistant message with text wins)."""
    if isinstance(output_content, str):
        return output_content
    if isinstance(output_content, list):
        for message in reversed(output_content):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                text = _text_of(message.get("content"))
                if text:
                    return text
    return _text_of(output_content)


def tool_result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def hook_context(event: str, context: dict[str, Any], facts: TurnFacts) -> dict[str, Any]:
    """The context a hook receives at `event`, built from the SDK context at its point."""
    out: dict[str, Any] = {
        "hook_event_name": event,
        "agent_name": facts.agent_name,
        "current_turn": facts.current_turn,
        "max_turns": facts.max_turns,
        "execution_summary": facts.transcript_path,
    }
    if event == "Stop":
        output = context.get("output") or {}
        out["final_output"] = final_text(output.get("content"))
        out["stop_hook_active"] = facts.stop_rejection_count > 0
        out["stop_rejection_count"] = facts.stop_rejection_count
        return out
    tool_call = context.get("tool_call") or {}
    out["tool_name"] = str(tool_call.get("name", ""))
    args = tool_call.get("args")
    out["tool_input"] = args if isinstance(args, dict) else {}
    if event == "PostToolUse":
        result = context.get("tool_result") or {}
        out["tool_result"] = tool_result_text(result.get("value"))
        out["tool_succeeded"] = not bool(result.get("is_error", False))
    return out


def sample_context(event: str, agent_name: str) -> dict[str, Any]:
    """A realistic context per event (the console's "Test this hook" prefill)."""
    base: dict[str, Any] = {
        "hook_event_name": event,
        "agent_name": agent_name,
        "current_turn": 3,
        "max_turns": 40,
        "execution_summary": "transcript.jsonl",  # replaced by a real file when a test runs
    }
    if event == "Stop":
        base.update(
            final_output="Restarted the api service; error rate is back to normal.",
            stop_hook_active=False,
            stop_rejection_count=0,
        )
    elif event == "PostToolUse":
        base.update(
            tool_name="Bash",
            tool_input={"command": "systemctl restart api"},
            tool_result="api.service restarted",
            tool_succeeded=True,
        )
    elif event == "PreToolUse":
        base.update(tool_name="Bash", tool_input={"command": "systemctl restart api"})
    else:
        raise ValueError(f"Unknown event {event!r}; expected Stop, PostToolUse or PreToolUse.")
    return base
