"""Sandbox configuration: the development switch is off by default, a sandbox that cannot be
built is a hook error (never an unsandboxed run), and the configured limits are the ones the
hook actually runs under."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from console_client import run_command_hook
from console_client.results import HookResult
from console_client.sandbox import (
    UNSANDBOXED_ENV,
    HookProgram,
    SandboxConfig,
    prepared_invocation,
    unsandboxed_requested,
)

MIB = 1024 * 1024
CONTEXT: dict[str, Any] = {"hook_event_name": "PostToolUse", "tool_name": "Bash"}
WHERE_AM_I = "#!/bin/bash\nhostname >&2\n"


def run(script: str, *, fail_mode: str = "block", **kw: Any) -> HookResult:
    hook = {"type": "command", "script": script, "timeout": 10, "failMode": fail_mode}
    return run_command_hook(hook, CONTEXT, **kw)


def test_switch_is_off_by_default() -> None:
    assert UNSANDBOXED_ENV not in os.environ
    assert unsandboxed_requested() is False
    assert unsandboxed_requested({UNSANDBOXED_ENV: "1"}) is True
    for value in ("", "0", "true", "yes", " 1"):
        assert unsandboxed_requested({UNSANDBOXED_ENV: value}) is False


def test_hooks_run_sandboxed_without_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)
    assert run(WHERE_AM_I).stderr.strip() == "hook"


@pytest.mark.parametrize("value", ["0", "true"])
def test_only_the_value_1_disables_the_sandbox(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(UNSANDBOXED_ENV, value)
    assert run(WHERE_AM_I).stderr.strip() == "hook"


def test_switch_runs_unsandboxed_with_a_warning_each_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(UNSANDBOXED_ENV, "1")
    with caplog.at_level(logging.WARNING, logger="console_client.sandbox"):
        first = run(WHERE_AM_I)
        second = run(WHERE_AM_I)
    assert first.stderr.strip() == second.stderr.strip() == socket.gethostname()
    warnings = [r for r in caplog.records if "WITHOUT the sandbox" in r.getMessage()]
    assert len(warnings) == 2


def _marker_script(marker: Path) -> str:
    return f"#!/bin/bash\ntouch {marker}\n"


@pytest.mark.parametrize(
    ("config", "error_part"),
    [
        (SandboxConfig(bwrap_path="/nonexistent/bwrap"), "bubblewrap is not available"),
        (SandboxConfig(prlimit_path="/nonexistent/prlimit"), "prlimit is not available"),
        (
            SandboxConfig(extra_ro_binds=(("/nonexistent/source", "/opt/x"),)),
            "bwrap: Can't find source path",
        ),
    ],
)
def test_a_sandbox_that_cannot_be_built_is_a_hook_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: SandboxConfig, error_part: str
) -> None:
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)
    marker = tmp_path / f"ran-{uuid.uuid4().hex}"
    blocked = run(_marker_script(marker), sandbox=config)
    assert blocked.decision == "block"
    assert blocked.error is not None and "sandbox could not be built" in blocked.error
    assert error_part in blocked.error and error_part in blocked.reason
    allowed = run(_marker_script(marker), fail_mode="allow", sandbox=config)
    assert allowed.decision == "allow"
    assert allowed.error is not None and error_part in allowed.error
    assert not marker.exists()  # the hook never ran on the host


def test_limits_inside_are_the_configured_ones() -> None:
    result = run("#!/bin/bash\ncat /proc/self/limits >&2\n")
    limits = {line[:26].strip(): line[26:].split()[:2] for line in result.stderr.splitlines()[1:]}
    assert limits["Max cpu time"] == ["11", "12"]  # the hook's timeout + 1 s
    assert limits["Max address space"] == [str(512 * MIB)] * 2
    assert limits["Max processes"] == ["64", "64"]
    assert limits["Max file size"] == [str(16 * MIB)] * 2
    assert limits["Max open files"] == ["256", "256"]
    assert limits["Max core file size"] == ["0", "0"]


def test_tmp_is_size_limited() -> None:
    result = run(
        "#!/bin/bash\n"
        "for i in 1 2 3; do head -c 4000000 /dev/zero > /tmp/f$i 2>/dev/null || echo FULL >&2; done\n",
        sandbox=SandboxConfig(tmp_size_bytes=10 * MIB),
    )
    assert result.stderr.split() == ["FULL"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root agent drops to the host user nobody")
def test_a_root_agent_runs_the_sandbox_as_host_nobody() -> None:
    marker = f"{500 + uuid.uuid4().int % 400}.{uuid.uuid4().int % 10**6:06d}"
    thread = threading.Thread(
        target=run_command_hook,
        args=({"type": "command", "command": f"sleep {marker}", "timeout": 3}, CONTEXT),
    )
    thread.start()
    uids: set[int] = set()
    deadline = time.monotonic() + 2.5
    while not uids and time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                    uids.add(entry.stat().st_uid)
            except OSError:
                continue
        time.sleep(0.05)
    thread.join()
    assert uids == {65534}


def test_transcript_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = run("#!/bin/bash\nexit 0\n", transcript_path=str(fifo))
    assert time.monotonic() - started < 15  # opening the FIFO did not hang
    assert result.decision == "block"
    assert result.error is not None and "not a regular file" in result.error


def test_missing_transcript_becomes_an_empty_file() -> None:
    result = run(
        '#!/bin/bash\np=$(jq -r .execution_summary); stat -c "%n %s" "$p" >&2\n',
        transcript_path="/nonexistent/transcript.jsonl",
    )
    assert result.stderr.strip() == "/hook/transcript.jsonl 0"


def test_large_transcript_keeps_its_newest_part(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("old\n" * 100 + "newest line\n")
    result = run(
        '#!/bin/bash\ncat "$(jq -r .execution_summary)" >&2\n',
        transcript_path=str(transcript),
        sandbox=SandboxConfig(transcript_max_bytes=20),
    )
    assert len(result.stderr) == 20
    assert result.stderr.endswith("newest line\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another host user")
def test_process_cap_counts_the_sandbox_not_the_busy_host_user() -> None:
    """An unprivileged agent user that already runs 150 processes can still start hooks,
    and each hook is still held to its own 64 processes."""
    fork_200 = (
        "python3 -c 'import os, signal, time\n"
        "pids = []\n"
        "for _ in range(200):\n"
        "    try: pid = os.fork()\n"
        "    except OSError: break\n"
        "    if pid == 0: time.sleep(3); os._exit(0)\n"
        "    pids.append(pid)\n"
        "print(len(pids))\n"
        "[os.kill(p, signal.SIGKILL) for p in pids]'"
    )
    agent_uid = 12345
    sleepers = [
        subprocess.Popen(["sleep", "20"], user=agent_uid, group=agent_uid, extra_groups=[])
        for _ in range(150)
    ]
    try:
        with prepared_invocation(
            HookProgram("command", fork_200),
            CONTEXT,
            transcript_path=None,
            config=SandboxConfig(),
            timeout=10,
        ) as inv:
            done = subprocess.run(
                ["setpriv", f"--reuid={agent_uid}", f"--regid={agent_uid}", "--clear-groups", "--"]
                + inv.argv,
                input=inv.stdin,
                capture_output=True,
                pass_fds=inv.pass_fds,
                env=inv.env,
                cwd=inv.cwd,
                timeout=20,
            )
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert done.returncode == 0, done.stderr
    assert 0 < int(done.stdout) < 64
