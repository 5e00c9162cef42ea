"""The per-session transcript file and the ReadFile/GrepSearch tools limited to it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from console_client.transcript import (
    ENTRY_MAX_CHARS,
    GREP_MAX_MATCHES,
    SessionTranscript,
    TranscriptTools,
)


def test_create_makes_a_private_empty_file(tmp_path: Path) -> None:
    transcript = SessionTranscript.create("s-1", tmp_path / "transcripts")
    assert transcript.path == tmp_path / "transcripts" / "s-1.jsonl"
    assert transcript.path.read_bytes() == b""
    assert stat.S_IMODE(transcript.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(transcript.path.parent.stat().st_mode) == 0o700


def test_append_writes_one_json_object_per_line(tmp_path: Path) -> None:
    transcript = SessionTranscript.create("s-2", tmp_path)
    transcript.append("user", "restart api\nnow")
    transcript.append("tool", "ok", tool_name="Bash", call_id="c1", succeeded=True, skipped=None)
    first, second = (json.loads(line) for line in transcript.path.read_text().splitlines())
    assert (first["role"], first["content"]) == ("user", "restart api\nnow")
    assert first["ts"].endswith("+00:00")
    assert {k: second[k] for k in ("role", "content", "tool_name", "call_id", "succeeded")} == {
        "role": "tool",
        "content": "ok",
        "tool_name": "Bash",
        "call_id": "c1",
        "succeeded": True,
    }
    assert "skipped" not in second


def test_huge_entries_are_truncated(tmp_path: Path) -> None:
    transcript = SessionTranscript.create("s-3", tmp_path)
    transcript.append("tool", "x" * (ENTRY_MAX_CHARS + 10))
    entry = json.loads(transcript.path.read_text())
    assert entry["content"].endswith("[... 10 characters omitted]")


@pytest.mark.parametrize("session_id", ["../escape", "a/b", "", ".hidden"])
def test_unsafe_session_ids_are_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ValueError, match="not a safe file name"):
        SessionTranscript.create(session_id, tmp_path)


def test_a_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 65534, 65534)
    with pytest.raises(PermissionError, match="not a directory owned by this user"):
        SessionTranscript.create("s-4", shared)


def test_remove_deletes_the_file(tmp_path: Path) -> None:
    transcript = SessionTranscript.create("s-5", tmp_path)
    transcript.remove()
    assert not transcript.path.exists()
    transcript.remove()  # idempotent


@pytest.fixture
def tools(tmp_path: Path) -> tuple[TranscriptTools, Path]:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(f'{{"n": {n}, "content": "line {n}"}}\n' for n in range(1, 301)))
    return TranscriptTools(path), path


def test_read_file_pages_by_offset_and_limit(tools: tuple[TranscriptTools, Path]) -> None:
    reader, path = tools
    text = reader.call("ReadFile", json.dumps({"path": str(path), "offset": 10, "limit": 2}))
    assert text == '10\t{"n": 10, "content": "line 10"}\n11\t{"n": 11, "content": "line 11"}'
    default = reader.call("ReadFile", {"path": str(path)}).splitlines()
    assert len(default) == 200 and default[0].startswith("1\t")
    assert "shorter" in reader.read_file(str(path), offset=1000)


def test_grep_search_is_bounded(tools: tuple[TranscriptTools, Path]) -> None:
    reader, _ = tools
    assert (
        reader.call("GrepSearch", {"pattern": r"line 25\b"}) == '25:{"n": 25, "content": "line 25"}'
    )
    many = reader.grep_search("line").splitlines()
    assert len(many) == GREP_MAX_MATCHES + 1 and "stopped after" in many[-1]
    assert reader.grep_search("nothing-like-this") == "No matches."
    assert reader.grep_search("(unclosed").startswith("Error: invalid regular expression")


def test_tools_refuse_other_paths_and_bad_calls(tools: tuple[TranscriptTools, Path]) -> None:
    reader, path = tools
    sneaky = path.parent / "sub" / ".." / path.name  # the same file, spelled differently
    (path.parent / "sub").mkdir()
    assert reader.read_file(str(sneaky), limit=1).startswith("1\t")
    for other in ("/etc/passwd", "/proc/self/environ", str(path) + ".bak", 42):
        assert reader.read_file(other).startswith("Error: only the transcript")
    assert reader.call("ReadFile", "{not json").startswith("Error: the tool arguments")
    assert reader.call("WriteFile", {"path": str(path)}).startswith("Error: unknown tool")
    assert TranscriptTools(None).read_file(None) == "Error: this session has no transcript."
