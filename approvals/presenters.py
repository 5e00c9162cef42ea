"""What the escalation detail page derives from stored fields, never adding facts: the
reviewer's edit of the arguments as a list of changes, and the transcript as messages.

The transcript is what console_client sends: the last TRANSCRIPT_TAIL_BYTES of its JSON Lines
file (one `{"ts", "role", "content", ...}` object per line), so its first line is usually cut.
Anything that is not in that form is shown as stored, and said so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.errors import pointer

DIFF_MAX_CHANGES = 200


@dataclass(frozen=True)
class ArgumentChange:
    pointer: str  # JSON pointer into the arguments; "" is the whole value
    kind: str  # added | removed | changed
    before: str  # compact JSON; "" when added
    after: str  # compact JSON; "" when removed


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _walk(at: str, before: Any, after: Any, out: list[ArgumentChange]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        # Sorted: PostgreSQL's jsonb keeps neither side's key order.
        for key in sorted({*before, *after}):
            here = at + pointer(str(key))
            if key not in after:
                out.append(ArgumentChange(here, "removed", _json(before[key]), ""))
            elif key not in before:
                out.append(ArgumentChange(here, "added", "", _json(after[key])))
            else:
                _walk(here, before[key], after[key], out)
        return
    if isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            here = f"{at}/{index}"
            if index >= len(after):
                out.append(ArgumentChange(here, "removed", _json(before[index]), ""))
            elif index >= len(before):
                out.append(ArgumentChange(here, "added", "", _json(after[index])))
            else:
                _walk(here, before[index], after[index], out)
        return
    # Compared as JSON text: in Python 1 == 1.0 == True, on the wire they differ.
    if _json(before) != _json(after):
        out.append(ArgumentChange(at, "changed", _json(before), _json(after)))


def arguments_diff(before: Any, after: Any) -> tuple[list[ArgumentChange], int]:
    """The changes from the requested to the approved arguments (at most DIFF_MAX_CHANGES)
    and how many more there were."""
    changes: list[ArgumentChange] = []
    _walk("", before, after, changes)
    return changes[:DIFF_MAX_CHANGES], max(0, len(changes) - DIFF_MAX_CHANGES)


@dataclass(frozen=True)
class TranscriptMessage:
    role: str  # user | assistant | tool | whatever the line said
    kind: str  # message | tool_call | tool_result | context | unreadable
    text: str
    at: datetime | None = None
    tool_name: str = ""
    arguments: str = ""  # a tool call's arguments, pretty JSON
    failed: bool = False


@dataclass(frozen=True)
class Transcript:
    messages: list[TranscriptMessage] = field(default_factory=list)
    cut: bool = False  # earlier conversation was not sent (the first line was a fragment)
    raw: str = ""  # the stored text when it is not JSON Lines at all


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _message(entry: dict[str, Any]) -> TranscriptMessage:
    role, text = str(entry["role"]), str(entry["content"])
    tool_name = str(entry.get("tool_name") or "")
    at = _timestamp(entry.get("ts"))
    if role == "assistant" and tool_name:
        try:
            call = json.loads(text)
        except json.JSONDecodeError:
            call = None
        if isinstance(call, dict) and "tool_call" in call:
            arguments = json.dumps(call.get("args"), indent=2, ensure_ascii=False)
            return TranscriptMessage(role, "tool_call", "", at, tool_name, arguments)
    if role == "tool":
        failed = entry.get("succeeded") is False
        return TranscriptMessage(role, "tool_result", text, at, tool_name, failed=failed)
    if role == "user" and entry.get("additional_context_for"):
        return TranscriptMessage(role, "context", text, at)
    return TranscriptMessage(role, "message", text, at)


def _entry(line: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return None
    if isinstance(entry, dict) and isinstance(entry.get("role"), str) and "content" in entry:
        return entry
    return None


def transcript_view(text: str) -> Transcript:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return Transcript()
    entries = [_entry(line) for line in lines]
    if not any(entries):
        return Transcript(raw=text)
    cut = entries[0] is None
    messages = [
        _message(entry)
        if entry is not None
        else TranscriptMessage(role="", kind="unreadable", text=line)
        for line, entry in zip(lines, entries, strict=True)
    ]
    return Transcript(messages=messages[1:] if cut else messages, cut=cut)
