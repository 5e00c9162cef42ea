"""console-hook: stdin → the live console (daphne) → the runtime's stdout JSON and exit code;
fail closed for pre-tool events when the console is unreachable, slow or answers 5xx."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.models import InterceptionRecord
from tests.console_client.scripted_http import ScriptedHTTP
from tests.runtimes.runtime_support import BLOCK_RM_RF, SESSION

ROOT = Path(__file__).resolve().parents[2]
CODEX_PRE = {
    "session_id": SESSION,
    "turn_id": "turn-1",
    "transcript_path": None,
    "cwd": "/home/dev/project",
    "hook_event_name": "PreToolUse",
    "model": "gpt-5-codex",
    "permission_mode": "default",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build"},
    "tool_use_id": "call_1",
}
GEMINI_BEFORE_TOOL = {
    "session_id": SESSION,
    "transcript_path": "/home/dev/.gemini/tmp/session.json",
    "cwd": "/home/dev/project",
    "hook_event_name": "BeforeTool",
    "timestamp": "2026-12-01T10:00:00.000Z",
    "tool_name": "run_shell_command",
    "tool_input": {"command": "ls"},
}
COPILOT_PRE = {
    "sessionId": SESSION,
    "timestamp": 1764583200000,
    "cwd": "/home/dev/project",
    "toolName": "bash",
    "toolArgs": json.dumps({"command": "rm -rf build"}),
}


def run_hook(args: list[str], body: object, *, url: str, token: str = "agt_x", timeout: float = 60):
    env = {**os.environ, "CONSOLE_URL": url, "CONSOLE_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "console_client.hook_cli", *args],
        input=json.dumps(body).encode(),
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )


@pytest.fixture
def blocking(governed):
    return governed({"PreToolUse": [{**BLOCK_RM_RF, "matcher": "Bash|bash"}]})


def _records_soon(within: float = 10.0, **match: str) -> int:
    deadline = time.monotonic() + within
    while not (count := InterceptionRecord.objects.filter(**match).count()):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return count


def test_a_codex_deny_is_printed_for_codex_and_exits_0(blocking):
    done = run_hook(["codex"], CODEX_PRE, url=blocking.console.url, token=blocking.token)
    assert done.returncode == 0, done.stderr
    specific = json.loads(done.stdout)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "rm -rf is not allowed" in specific["permissionDecisionReason"]
    # The console stores a call's records after it has answered (the runtime is not held
    # up for them), so they may land just after the command has exited.
    assert _records_soon(framework="codex", tool_name="Bash") == 1


def test_no_objection_prints_nothing(blocking):
    done = run_hook(
        ["gemini-cli"], GEMINI_BEFORE_TOOL, url=blocking.console.url, token=blocking.token
    )
    assert done.returncode == 0 and done.stdout == b""


def test_copilot_is_told_its_event_and_reads_toolargs_as_a_json_string(blocking):
    done = run_hook(
        ["copilot", "--event", "preToolUse"],
        COPILOT_PRE,
        url=blocking.console.url,
        token=blocking.token,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["permissionDecision"] == "deny"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_console_blocks_a_pre_tool_event_with_exit_2():
    done = run_hook(["codex"], CODEX_PRE, url=f"http://127.0.0.1:{_closed_port()}")
    assert done.returncode == 2
    assert b"gave no answer" in done.stderr
    assert b"unreachable" in done.stderr


def test_fail_open_lets_it_through():
    done = run_hook(["codex", "--fail-open"], CODEX_PRE, url=f"http://127.0.0.1:{_closed_port()}")
    assert done.returncode == 0 and done.stdout == b""
    assert b"not blocked" in done.stderr


def test_a_post_tool_event_is_not_blocked_when_the_console_is_down():
    body = {**CODEX_PRE, "hook_event_name": "PostToolUse", "tool_response": "ok"}
    done = run_hook(["codex"], body, url=f"http://127.0.0.1:{_closed_port()}")
    assert done.returncode == 0


def test_a_5xx_answer_blocks():
    server = ScriptedHTTP().start()
    try:
        server.route("POST", "/api/v1/hooks/", (503, {"error": {"message": "db down"}}))
        done = run_hook(["gemini-cli"], GEMINI_BEFORE_TOOL, url=server.url)
    finally:
        server.stop()
    assert done.returncode == 2
    assert b"503" in done.stderr and b"db down" in done.stderr
    assert server.seen[0].headers["Authorization"] == "Bearer agt_x"


def test_copilot_gets_a_deny_on_stdout_because_it_ignores_exit_codes():
    done = run_hook(
        ["copilot", "--event", "preToolUse"], COPILOT_PRE, url=f"http://127.0.0.1:{_closed_port()}"
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["permissionDecision"] == "deny"


def test_a_console_that_does_not_answer_in_time_blocks():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections, never answers
        started = time.monotonic()
        done = run_hook(
            ["codex", "--timeout", "1"],
            CODEX_PRE,
            url=f"http://127.0.0.1:{silent.getsockname()[1]}",
        )
    assert time.monotonic() - started < 20
    assert done.returncode == 2
    assert b"within 1 s" in done.stderr


def test_no_console_url_blocks_and_says_so():
    env = {k: v for k, v in os.environ.items() if k not in ("CONSOLE_URL", "CONSOLE_TOKEN")}
    done = subprocess.run(
        [sys.executable, "-m", "console_client.hook_cli", "codex"],
        input=json.dumps(CODEX_PRE).encode(),
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    assert b"CONSOLE_URL is not set" in done.stderr


def test_gemini_cli_prefixed_variables_stand_in_for_the_plain_ones():
    server = ScriptedHTTP().start()
    env = {k: v for k, v in os.environ.items() if k not in ("CONSOLE_URL", "CONSOLE_TOKEN")}
    env.update(GEMINI_CLI_CONSOLE_URL=server.url, GEMINI_CLI_CONSOLE_TOKEN="agt_gemini")
    try:
        server.route("POST", "/api/v1/hooks/", (200, {}))
        done = subprocess.run(
            [sys.executable, "-m", "console_client.hook_cli", "gemini-cli"],
            input=json.dumps(GEMINI_BEFORE_TOOL).encode(),
            capture_output=True,
            env=env,
            cwd=ROOT,
            timeout=60,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert server.seen[0].headers["Authorization"] == "Bearer agt_gemini"
