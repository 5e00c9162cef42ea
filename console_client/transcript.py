"""The per-session transcript file that hooks read through `execution_summary`.

The client appends one JSON object per line (`role`, `content`, a UTC timestamp and any
extra facts such as `tool_name`), so command hooks can `jq`/`grep` it and prompt hooks can
read it through the two tools defined here. The file is private to the agent's user (0600
in a 0700 directory); command hooks get a read-only copy inside their sandbox.

`TranscriptTools` implements `ReadFile` and `GrepSearch` for the LLM judge: they read the
transcript and nothing else. Any other path is answered with an error message, never with
file content. GrepSearch patterns are RE2 (console_client.patterns): the model chooses
them, so they must not be able to take exponential time. Both tools stop at the next line
once their `cancelled` event is set (the judge's timeout fired).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from console_client.patterns import PatternError, compile_pattern, subject

ENTRY_MAX_CHARS = 200_000
READ_DEFAULT_LINES = 200
READ_MAX_LINES = 1000
LINE_MAX_CHARS = 2000
TOOL_OUTPUT_MAX_CHARS = 64 * 1024
GREP_MAX_MATCHES = 100
PATTERN_MAX_CHARS = 1000


def default_transcript_dir() -> Path:
    """`$CONSOLE_TRANSCRIPT_DIR`, else a private per-user directory under the system temp dir."""
    configured = os.environ.get("CONSOLE_TRANSCRIPT_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"console-client-{os.getuid()}"


def _private_dir(directory: Path) -> Path:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(directory)
    # A shared temp dir could hold someone else's directory (or a symlink) under our name.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{directory} is not a directory owned by this user")
    if info.st_mode & 0o077:
        os.chmod(directory, 0o700)
    return directory


class SessionTranscript:
    """An append-only JSON Lines transcript for one hooks session."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()

    @classmethod
    def create(cls, session_id: str, directory: str | Path | None = None) -> SessionTranscript:
        """Start an empty transcript `<directory>/<session_id>.jsonl` (0600)."""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", session_id):
            raise ValueError(f"session_id {session_id!r} is not a safe file name")
        folder = _private_dir(Path(directory) if directory else default_transcript_dir())
        path = folder / f"{session_id}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        return cls(path)

    @property
    def path(self) -> Path:
        return self._path

    def append(self, role: str, content: str, **extra: Any) -> None:
        """Add one entry; `extra` holds JSON-serialisable facts (tool_name, call_id, ...)."""
        if len(content) > ENTRY_MAX_CHARS:
            omitted = len(content) - ENTRY_MAX_CHARS
            content = content[:ENTRY_MAX_CHARS] + f"\n[... {omitted} characters omitted]"
        entry: dict[str, Any] = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "role": role,
            "content": content,
        }
        entry.update({key: value for key, value in extra.items() if value is not None})
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)

    def remove(self) -> None:
        self._path.unlink(missing_ok=True)


READ_FILE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "ReadFile",
        "description": (
            "Read lines of the conversation transcript (JSON Lines, one message per line). "
            "Only the transcript path given in execution_summary can be read."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The transcript path."},
                "offset": {"type": "integer", "description": "First line to read (1-based)."},
                "limit": {"type": "integer", "description": "How many lines to read."},
            },
            "required": ["path"],
        },
    },
}

GREP_SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "GrepSearch",
        "description": (
            "Search the conversation transcript with a regular expression; returns matching "
            "lines with their line numbers."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": (
                        "A regular expression in RE2 syntax (Python's, without "
                        "backreferences or lookaround)."
                    ),
                },
                "path": {"type": "string", "description": "The transcript path (optional)."},
            },
            "required": ["pattern"],
        },
    },
}


class TranscriptTools:
    """`ReadFile` / `GrepSearch` over one transcript file, refusing every other path."""

    def __init__(self, transcript_path: str | Path | None) -> None:
        self._path = str(transcript_path) if transcript_path else None

    @staticmethod
    def definitions() -> list[dict[str, Any]]:
        return [READ_FILE_TOOL, GREP_SEARCH_TOOL]

    def call(
        self,
        name: str,
        arguments: str | dict[str, Any] | None,
        cancelled: threading.Event | None = None,
    ) -> str:
        """Run one tool call; the answer is always text (an `Error: ...` on refusal)."""
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments or "{}")
            except ValueError:
                return "Error: the tool arguments are not valid JSON."
        else:
            parsed = arguments or {}
        if not isinstance(parsed, dict):
            return "Error: the tool arguments must be a JSON object."
        try:
            if name == "ReadFile":
                return self.read_file(
                    parsed.get("path"),
                    offset=parsed.get("offset"),
                    limit=parsed.get("limit"),
                    cancelled=cancelled,
                )
            if name == "GrepSearch":
                return self.grep_search(
                    parsed.get("pattern"), path=parsed.get("path"), cancelled=cancelled
                )
        except OSError as exc:
            return f"Error: the transcript cannot be read ({exc.strerror or exc})."
        return f"Error: unknown tool {name!r}; the tools are ReadFile and GrepSearch."

    def _refusal(self, path: object) -> str | None:
        if self._path is None:
            return "Error: this session has no transcript."
        if path is None or path == "" or path == self._path:
            return None
        if isinstance(path, str) and os.path.realpath(path) == os.path.realpath(self._path):
            return None
        return f"Error: only the transcript at {self._path} can be read; {path!r} is refused."

    def _lines(self, cancelled: threading.Event | None = None) -> Iterator[str]:
        assert self._path is not None
        with open(self._path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if cancelled is not None and cancelled.is_set():
                    return
                yield line.rstrip("\n")[:LINE_MAX_CHARS]

    def read_file(
        self,
        path: object,
        *,
        offset: object = None,
        limit: object = None,
        cancelled: threading.Event | None = None,
    ) -> str:
        refused = self._refusal(path)
        if refused:
            return refused
        start = offset if isinstance(offset, int) and offset > 0 else 1
        count = limit if isinstance(limit, int) and limit > 0 else READ_DEFAULT_LINES
        count = min(count, READ_MAX_LINES)
        out: list[str] = []
        size = 0
        lines = islice(self._lines(cancelled), start - 1, start - 1 + count)
        for number, line in enumerate(lines, start):
            rendered = f"{number}\t{line}"
            size += len(rendered) + 1
            if size > TOOL_OUTPUT_MAX_CHARS:
                out.append("[... output truncated; read on with a larger offset]")
                break
            out.append(rendered)
        if not out:
            return f"(no lines at offset {start}; the transcript is shorter)"
        return "\n".join(out)

    def grep_search(
        self, pattern: object, *, path: object = None, cancelled: threading.Event | None = None
    ) -> str:
        refused = self._refusal(path)
        if refused:
            return refused
        if not isinstance(pattern, str) or not pattern:
            return "Error: pattern must be a non-empty string."
        if len(pattern) > PATTERN_MAX_CHARS:
            return f"Error: pattern is longer than {PATTERN_MAX_CHARS} characters."
        try:
            regex = compile_pattern(pattern)
        except PatternError as exc:
            return f"Error: invalid regular expression (RE2 syntax): {exc}."
        matches: list[str] = []
        for number, line in enumerate(self._lines(cancelled), 1):
            if regex.search(subject(line)):
                matches.append(f"{number}:{line[:500]}")
                if len(matches) >= GREP_MAX_MATCHES:
                    matches.append(f"[... stopped after {GREP_MAX_MATCHES} matches]")
                    break
        return "\n".join(matches) if matches else "No matches."
