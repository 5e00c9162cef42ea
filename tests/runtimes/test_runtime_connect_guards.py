"""The generated Cursor and Copilot commands still deny a tool when console-hook itself
cannot run (not installed, not on PATH): both runtimes take a failing command as "allow"."""

from __future__ import annotations

import json
import subprocess

import pytest

# A PATH with a shell and printf but no console-hook.
NO_CONSOLE_HOOK = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def run_generated(command: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-c", command],
        input=b"{}",
        capture_output=True,
        env=NO_CONSOLE_HOOK,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize(
    ("runtime", "pick", "key", "exit_code"),
    [
        ("cursor", lambda hooks: hooks["preToolUse"][0]["command"], "permission", 2),
        ("cursor", lambda hooks: hooks["beforeShellExecution"][0]["command"], "permission", 2),
        ("copilot", lambda hooks: hooks["preToolUse"][0]["bash"], "permissionDecision", 0),
    ],
)
def test_a_missing_console_hook_prints_the_runtimes_deny(
    client, sre, runtime, pick, key, exit_code
):
    hooks = client.get(f"/api/v1/connect/{runtime}", **sre.headers()).json()["hooks"]
    done = run_generated(pick(hooks))
    assert done.returncode == exit_code
    assert json.loads(done.stdout)[key] == "deny"


@pytest.mark.parametrize(
    ("runtime", "pick"),
    [
        ("cursor", lambda hooks: hooks["stop"][0]["command"]),
        ("copilot", lambda hooks: hooks["agentStop"][0]["bash"]),
    ],
)
def test_other_events_print_nothing_when_console_hook_is_missing(client, sre, runtime, pick):
    hooks = client.get(f"/api/v1/connect/{runtime}", **sre.headers()).json()["hooks"]
    done = run_generated(pick(hooks))
    assert done.stdout == b""
