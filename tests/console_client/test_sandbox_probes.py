"""Probes of the command-hook sandbox: each runs a real hook under bubblewrap and checks,
from inside and from the host, that the isolation holds. Where a probe could pass for the
wrong reason, a control run shows the same probe succeeding without that limit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from console_client import run_command_hook
from console_client.results import HookResult
from console_client.sandbox import UNSANDBOXED_ENV, SandboxConfig
from console_client.transcript import SessionTranscript

GIB = 1024**3
CONTEXT: dict[str, Any] = {
    "hook_event_name": "PostToolUse",
    "agent_name": "sre-agent",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
}


@pytest.fixture(autouse=True)
def _sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)


def probe(
    script: str, *, timeout: int = 10, config: SandboxConfig | None = None, **kw: Any
) -> HookResult:
    hook = {"type": "command", "script": script, "timeout": timeout, "failMode": "block"}
    return run_command_hook(hook, {**CONTEXT, **kw.pop("context", {})}, sandbox=config, **kw)


def python_probe(body: str, **kw: Any) -> dict[str, Any]:
    """Run a python3 hook that prints a JSON report on stderr; return the report."""
    script = "#!/usr/bin/env python3\nimport json, os, sys\nreport = {}\n"
    script += body + "\nprint(json.dumps(report), file=sys.stderr)\n"
    result = probe(script, **kw)
    assert result.exit_code == 0, result
    return json.loads(result.stderr)


def host_can_connect(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_network_is_unreachable_from_the_hook() -> None:
    host_ports = [port for port in (6379, 5432) if host_can_connect(port)]
    assert host_ports, "control: the host should reach Redis or PostgreSQL on loopback"
    report = python_probe(
        f"""
import socket, errno
for port in {host_ports!r}:
    s = socket.socket(); s.settimeout(2)
    report[str(port)] = errno.errorcode.get(s.connect_ex(("127.0.0.1", port)), "connected")
s = socket.socket(); s.settimeout(2)
report["external"] = errno.errorcode.get(s.connect_ex(("192.0.2.1", 80)), "connected")
report["interfaces"] = [name for _, name in socket.if_nameindex()]
"""
    )
    for port in host_ports:
        assert report[str(port)] == "ECONNREFUSED"
    assert report["external"] == "ENETUNREACH"
    assert report["interfaces"] == ["lo"]


def test_writes_outside_tmp_are_refused() -> None:
    result = probe(
        "#!/bin/bash\n"
        "for p in /usr/probe /usr/bin/probe /etc/probe /etc/passwd /work/probe /probe "
        "/hook/probe /dev/probe /dev/shm/probe /root/probe /var/probe /proc/sys/kernel/probe; do\n"
        '  if ( echo x > "$p" ) 2>/dev/null; then echo "WROTE $p" >&2; fi\n'
        "done\n"
        "echo written > /tmp/probe && cat /tmp/probe >&2\n"
    )
    assert "WROTE" not in result.stderr
    assert result.stderr.strip() == "written"  # control: /tmp is writable


def test_host_files_are_not_visible() -> None:
    here = Path(__file__).resolve()
    assert here.exists() and Path("/etc/shadow").exists()  # control: the host has them
    result = probe(
        "#!/bin/bash\n"
        f"for p in {here} {here.parents[2]} /work /root /home /etc/shadow /var /opt; do\n"
        '  if [ -e "$p" ]; then echo "SEEN $p" >&2; fi\n'
        "done\n"
        "ls /etc >&2\n"
    )
    assert "SEEN" not in result.stderr
    assert set(result.stderr.split()) <= {
        "alternatives",
        "group",
        "hostname",
        "hosts",
        "ld.so.cache",
        "localtime",
        "nsswitch.conf",
        "passwd",
        "python3",
        "python3.11",
        "python3.12",
        "python3.13",
    }


def test_environment_has_none_of_the_parent_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("CONSOLE_PROBE_SECRET", secret)
    assert os.environ["CONSOLE_PROBE_SECRET"] == secret
    result = probe(
        "#!/bin/bash\nenv >&2\ncat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' >&2\n"
    )
    assert secret not in result.stderr
    assert "CONSOLE_PROBE_SECRET" not in result.stderr
    names = {line.split("=", 1)[0] for line in result.stderr.splitlines() if "=" in line}
    assert {"PATH", "HOME", "LANG"} <= names <= {"PATH", "HOME", "LANG", "PWD", "SHLVL", "_"}
    assert "HOME=/tmp" in result.stderr


@pytest.mark.slow
def test_process_limit_contains_a_fork_bomb() -> None:
    marker = uuid.uuid4().hex
    started = time.monotonic()
    # The main shell keeps running (builtins only, no fork) until the wall clock hits.
    script = (
        f"#!/bin/bash\n: {marker}\nbomb() {{ bomb | bomb & }}\nbomb\n"
        "SECONDS=0; while (( SECONDS < 30 )); do :; done\n"
    )
    result = probe(script, timeout=3)
    assert time.monotonic() - started < 15  # the shell alone would run 30 s
    assert result.error is not None and "timed out" in result.error
    assert result.decision == "block"  # failMode block
    assert "Resource temporarily unavailable" in result.stderr  # the process cap was hit

    def leftovers() -> list[str]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
        return found

    deadline = time.monotonic() + 3
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers() == []
    # The host is unaffected: it still forks and runs programs.
    assert subprocess.run(["/bin/true"], check=False).returncode == 0


@pytest.mark.parametrize(("max_processes", "capped"), [(64, True), (1000, False)])
def test_process_count_is_capped_inside(max_processes: int, capped: bool) -> None:
    report = python_probe(
        """
import signal, time
pids = []
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    pids.append(pid)
report["forked"] = len(pids)
for pid in pids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
""",
        config=SandboxConfig(max_processes=max_processes),
    )
    assert (report["forked"] < 64) is capped, report
    if not capped:
        assert report["forked"] == 200


def test_memory_cap_stops_a_2_gib_allocation() -> None:
    body = """
import mmap
try:
    block = bytearray(2 * 1024**3)
    report["bytearray"] = "allocated"
except MemoryError:
    report["bytearray"] = "MemoryError"
try:
    mapping = mmap.mmap(-1, 2 * 1024**3)
    report["mmap"] = "mapped"
except OSError as exc:
    report["mmap"] = "refused"
"""
    assert python_probe(body) == {"bytearray": "MemoryError", "mmap": "refused"}
    mapped = python_probe(
        "import mmap\nmmap.mmap(-1, 2 * 1024**3)\nreport['mmap'] = 'mapped'\n",
        config=SandboxConfig(memory_bytes=4 * GIB),
    )
    assert mapped == {"mmap": "mapped"}  # control: the cap is what refused it


@pytest.mark.slow
def test_cpu_limit_kills_a_busy_loop() -> None:
    started = time.monotonic()
    result = probe(
        "#!/bin/bash\nwhile :; do :; done\n", timeout=20, config=SandboxConfig(cpu_seconds=1)
    )
    assert time.monotonic() - started < 12  # long before the 20 s wall clock
    assert result.error is not None and "SIGXCPU" in result.error
    assert result.decision == "block"


def test_file_size_limit_stops_a_large_file() -> None:
    result = probe(
        "#!/bin/bash\n"
        "head -c 20000000 /dev/zero > /tmp/big 2>/dev/null\n"
        'echo "$? $(stat -c %s /tmp/big)" >&2\n'
    )
    status, size = result.stderr.splitlines()[-1].split()
    assert int(status) == 128 + 25  # SIGXFSZ
    assert int(size) == 16 * 1024 * 1024


def test_no_capabilities_no_privilege_gain() -> None:
    report = python_probe(
        """
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs"):
    report[key] = status[key].strip()
report["uid"] = os.getuid()
try:
    os.setuid(0)
    report["setuid"] = "became root"
except OSError:  # EPERM, or EINVAL: uid 0 does not even exist in the namespace
    report["setuid"] = "refused"
import subprocess
unshare = subprocess.run(["unshare", "--user", "true"], capture_output=True)
report["userns"] = "created" if unshare.returncode == 0 else "refused"
"""
    )
    assert report == {
        "CapEff": "0000000000000000",
        "CapPrm": "0000000000000000",
        "CapBnd": "0000000000000000",
        "CapAmb": "0000000000000000",
        "NoNewPrivs": "1",
        "uid": 65534,
        "setuid": "refused",
        "userns": "refused",
    }


def test_host_processes_are_not_visible() -> None:
    host_pids = {int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()}
    assert os.getpid() in host_pids and len(host_pids) > 10  # control
    report = python_probe(
        """
report["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
report["init"] = open("/proc/1/cmdline", "rb").read().split(b"\\0")[0].decode()
"""
    )
    assert len(report["pids"]) <= 5
    assert os.getpid() not in report["pids"]
    assert report["init"].endswith("bwrap")


def test_transcript_is_readable_but_not_writable(tmp_path: Path) -> None:
    transcript = SessionTranscript.create("probe-session", tmp_path)
    transcript.append("user", "restart the api")
    transcript.append("tool", "restarted", tool_name="Bash")
    before = transcript.path.read_bytes()
    result = probe(
        "#!/bin/bash\n"
        "path=$(jq -r .execution_summary)\n"
        'echo "$path" >&2\n'
        'cat "$path" >&2\n'
        'if ( echo tampered >> "$path" ) 2>/dev/null; then echo WROTE >&2; fi\n'
        'if chmod 666 "$path" 2>/dev/null; then echo CHMOD >&2; fi\n'
        'if rm -f "$path" 2>/dev/null && [ ! -e "$path" ]; then echo REMOVED >&2; fi\n',
        transcript_path=str(transcript.path),
        context={"execution_summary": str(transcript.path)},
    )
    assert not {"WROTE", "CHMOD", "REMOVED"} & set(result.stderr.split())
    lines = result.stderr.splitlines()
    assert lines[0] == "/hook/transcript.jsonl"
    assert "\n".join(lines[1:]).encode() + b"\n" == before
    assert transcript.path.read_bytes() == before
