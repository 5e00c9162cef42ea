"""How a sandboxed hook is started (issue 14, item 6): the shortcuts taken to start it
faster must leave what the hook sees, and what the host sees, exactly as before.

- a shebang script runs its interpreter directly (no `env` trampoline) with the argv the
  kernel would have built;
- a root agent switches to the host ids with an exec of `unshare` in a vfork child instead
  of forking the whole agent, with the same ids and no supplementary groups;
- /etc is one read-only bind of a per-process prepared directory that follows the host;
- the process is driven by fd callbacks (a spawn failure is still a hook error)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console_client import run_command_hook, sandbox, sandbox_etc
from console_client.results import HookResult
from console_client.sandbox import (
    SANDBOX_SCRIPT_PATH,
    UNSANDBOXED_ENV,
    HookProgram,
    Invocation,
    SandboxConfig,
    prepared_invocation,
)
from console_client.sandbox_run import execute

CONTEXT: dict[str, Any] = {"hook_event_name": "PostToolUse", "tool_name": "Bash"}
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root agent")

# Everything about /etc a hook can observe, one line per entry: type, mode without write
# bits (the per-run binds kept the host's write bits on read-only mounts), link target or
# content digest.
ETC_LISTING = """#!/usr/bin/env python3
import hashlib, os, stat, sys
for root, dirs, files in os.walk("/etc"):
    dirs.sort()
    for name in sorted(dirs + files):
        path = os.path.join(root, name)
        info = os.lstat(path)
        mode = oct(stat.S_IMODE(info.st_mode) & 0o555)
        if stat.S_ISLNK(info.st_mode):
            print(path, "link", os.readlink(path), file=sys.stderr)
        elif stat.S_ISDIR(info.st_mode):
            print(path, "dir", mode, file=sys.stderr)
        else:
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            print(path, "file", mode, digest, file=sys.stderr)
"""


@pytest.fixture(autouse=True)
def _sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)


def run(script: str, **kw: Any) -> HookResult:
    hook = {"type": "command", "script": script, "timeout": 10, "failMode": "block"}
    return run_command_hook(hook, CONTEXT, **kw)


def argv_of(program: HookProgram, config: SandboxConfig | None = None) -> list[str]:
    config = config or SandboxConfig()
    with prepared_invocation(
        program, CONTEXT, transcript_path=None, config=config, timeout=5
    ) as invocation:
        return invocation.argv


# -- shebang scripts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first_line", "interpreter"),
    [("#!/usr/bin/env python3", ["python3"]), ("#!/bin/bash", ["/bin/bash"])],
)
def test_a_shebang_script_runs_its_interpreter_without_the_env_trampoline(
    first_line: str, interpreter: list[str]
) -> None:
    argv = argv_of(HookProgram("script", f"{first_line}\nexit 0\n"))
    assert argv[-2:] == [*interpreter, SANDBOX_SCRIPT_PATH]


def test_the_interpreter_sees_the_argv_the_kernel_would_have_built() -> None:
    python = run(
        "#!/usr/bin/env python3\nimport sys\n"
        "print(sys.argv, sys.orig_argv, sys.executable, file=sys.stderr)\n"
    )
    assert python.stderr.strip() == "['/hook/script'] ['python3', '/hook/script'] /usr/bin/python3"
    bash = run("#!/bin/bash \t\necho \"$0\" >&2; tr '\\0' ' ' < /proc/$$/cmdline >&2\n")
    assert bash.stderr.split("\n") == ["/hook/script", "/bin/bash /hook/script "]


def test_a_shebang_the_kernel_would_refuse_is_still_executed_by_the_kernel() -> None:
    """A CRLF shebang passes validation but names `/bin/bash\\r`: it fails as it always did
    instead of being quietly repaired."""
    argv = argv_of(HookProgram("script", "#!/bin/bash\r\necho hi\n"))
    assert argv[-1] == SANDBOX_SCRIPT_PATH and "/bin/bash" not in argv[-3:]
    result = run("#!/bin/bash\r\necho hi >&2\n")
    assert result.exit_code == 127 and "hi" not in result.stderr


# -- a root agent's ids ------------------------------------------------------------------


def sandbox_process_ids(command: str, config: SandboxConfig) -> dict[str, set[str]]:
    """Uid/Gid/Groups lines of every process whose command line holds `command` (bwrap's
    monitor, its PID 1 and the hook), sampled while the hook sleeps."""
    found: dict[str, set[str]] = {"Uid": set(), "Gid": set(), "Groups": set()}
    thread = threading.Thread(
        target=run_command_hook,
        args=({"type": "command", "command": command, "timeout": 3}, CONTEXT),
        kwargs={"sandbox": config},
    )
    thread.start()
    marker = command.split()[-1].encode()
    deadline = time.monotonic() + 2.5
    seen = 0
    while seen < 3 and time.monotonic() < deadline:
        seen = 0
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                    seen += 1
                    for line in (entry / "status").read_text().splitlines():
                        key, _, value = line.partition(":")
                        if key in found:
                            found[key].add(" ".join(value.split()))
            except OSError:
                continue
        time.sleep(0.05)
    thread.join()
    assert seen >= 3, "bwrap's monitor, its PID 1 and the hook should all have been seen"
    return found


@as_root
@pytest.mark.parametrize("unshare", ["/usr/bin/unshare", "/nonexistent/unshare"])
def test_a_root_agent_starts_every_sandbox_process_as_host_nobody_without_groups(
    unshare: str,
) -> None:
    """Through unshare, and through subprocess's own id switch when unshare is missing."""
    marker = f"{500 + uuid.uuid4().int % 400}.{uuid.uuid4().int % 10**6:06d}"
    ids = sandbox_process_ids(f"sleep {marker}", SandboxConfig(unshare_path=unshare))
    assert ids == {
        "Uid": {"65534 65534 65534 65534"},
        "Gid": {"65534 65534 65534 65534"},
        "Groups": {""},
    }


@as_root
def test_a_root_agent_switches_ids_by_exec_not_by_forking_itself() -> None:
    """subprocess can only change ids in a fork of the whole agent; an exec of unshare in a
    vfork child does it without copying the agent's memory."""
    with prepared_invocation(
        HookProgram("command", "exit 0"),
        CONTEXT,
        transcript_path=None,
        config=SandboxConfig(),
        timeout=5,
    ) as invocation:
        argv, popen_ids = invocation.spawn_args()
    assert popen_ids == {}
    assert argv[:4] == ["/usr/bin/unshare", "--setgid=65534", "--setuid=65534", "--"]
    assert argv[4] == "/usr/bin/bwrap"
    with prepared_invocation(
        HookProgram("command", "exit 0"),
        CONTEXT,
        transcript_path=None,
        config=SandboxConfig(unshare_path="/nonexistent/unshare"),
        timeout=5,
    ) as invocation:
        argv, popen_ids = invocation.spawn_args()
    assert argv[0] == "/usr/bin/bwrap"
    assert popen_ids == {"user": 65534, "group": 65534, "extra_groups": []}


# -- the prepared /etc -------------------------------------------------------------------


def etc_listing(**kw: Any) -> list[str]:
    result = run(ETC_LISTING, **kw)
    assert result.exit_code == 0, result
    return result.stderr.splitlines()


def test_the_prepared_etc_shows_what_the_per_run_etc_showed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prepared = etc_listing()
    assert any(line.startswith("/etc/ld.so.cache file") for line in prepared)
    assert any(line.startswith("/etc/alternatives/") for line in prepared)
    monkeypatch.setattr(sandbox_etc, "_base_dir", lambda as_root: None)  # no usable temp dir
    per_run = etc_listing()
    assert prepared == per_run


def test_the_etc_is_read_only_and_bound_from_one_prepared_directory() -> None:
    result = run(
        "#!/bin/bash\n"
        "grep -c ' /etc' /proc/self/mountinfo >&2\n"
        "for p in /etc/passwd /etc/probe /etc/python3/probe; do\n"
        '  if ( echo x > "$p" ) 2>/dev/null; then echo "WROTE $p" >&2; fi\n'
        "done\n"
    )
    assert result.stderr.split() == ["1"]


def host_sitecustomize_from_etc() -> bool:
    """The host's python3 imports a sitecustomize.py that lives in /etc (Debian's and
    Ubuntu's /etc/python3.X/sitecustomize.py) from a valid .pyc."""
    found = subprocess.run(
        ["python3", "-v", "-c", "import sitecustomize; print(sitecustomize.__file__)"],
        capture_output=True,
        text=True,
        env={"PATH": SandboxConfig().path_env},
        check=False,
    )
    lines = found.stdout.split()
    return (
        found.returncode == 0
        and bool(lines)
        and os.path.realpath(lines[-1]).startswith("/etc/python3")
        and "sitecustomize.cpython" in found.stderr
        and "bytecode is stale for 'sitecustomize'" not in found.stderr
    )


def test_python3_in_the_sandbox_uses_the_compiled_sitecustomize() -> None:
    """The copy of /etc/python3.X/sitecustomize.py keeps the host's mtime, so its .pyc in
    the read-only /usr stays valid: python3 does not recompile it (and fail to write the
    .pyc) on every start, as it did while the copy had the mtime of the copying."""
    if not host_sitecustomize_from_etc():
        pytest.skip("the host's python3 has no compiled sitecustomize.py in /etc")
    result = run("#!/bin/bash\npython3 -v -c pass 2>&1 | grep sitecustomize >&2\n")
    assert "bytecode is stale" not in result.stderr, result.stderr
    assert "code object from '/usr/lib/python3" in result.stderr, result.stderr


@pytest.fixture
def host_etc_entry() -> Iterator[Path]:
    """A scratch entry in the host's /etc (removed afterwards)."""
    if os.geteuid() != 0 or not os.access("/etc", os.W_OK):
        pytest.skip("needs a writable /etc")
    path = Path("/etc") / f"console-hook-probe-{uuid.uuid4().hex[:12]}"
    try:
        yield path
    finally:
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        elif path.exists():
            path.unlink()


def prepared_etc_of(config: SandboxConfig) -> Path:
    """The host directory the sandbox's /etc is bound from (from its mountinfo)."""
    result = run("#!/bin/bash\ngrep ' /etc ' /proc/self/mountinfo >&2\n", sandbox=config)
    return Path(result.stderr.split()[3])


def set_old_mtime(path: Path, seconds_ago: float) -> None:
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))


@pytest.fixture
def trust_any_mtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stamps are trusted however fresh: what these tests see is the stamp alone (else a
    recent change anywhere under /etc makes every run rebuild, for the right result)."""
    monkeypatch.setattr(sandbox_etc, "_SETTLE_NS", 0)


@pytest.mark.usefixtures("trust_any_mtime")
def test_a_changed_host_entry_is_seen_by_the_next_run(host_etc_entry: Path) -> None:
    config = SandboxConfig(etc_ro_binds=(*SandboxConfig().etc_ro_binds, str(host_etc_entry)))
    host_etc_entry.mkdir()
    inner = host_etc_entry / "setting"
    inner.write_text("one\n")
    set_old_mtime(inner, 60)
    set_old_mtime(host_etc_entry, 60)
    read = f"#!/bin/bash\ncat {inner} >&2\n"
    assert run(read, sandbox=config).stderr == "one\n"
    first = prepared_etc_of(config)
    assert first.is_dir()
    inner.write_text("two, edited in place\n")  # the directory's mtime does not change
    set_old_mtime(inner, 30)
    assert run(read, sandbox=config).stderr == "two, edited in place\n"
    (host_etc_entry / "added").write_text("three\n")
    assert run(f"#!/bin/bash\ncat {host_etc_entry}/added >&2\n", sandbox=config).stderr == "three\n"
    # A replaced snapshot is removed once no run uses it any more.
    assert prepared_etc_of(config) != first
    assert not first.exists()


def test_a_fresh_mtime_is_not_trusted(host_etc_entry: Path) -> None:
    """Rewritten within the same clock tick, a file keeps its mtime: while the stamp is that
    recent, every run prepares /etc again."""
    config = SandboxConfig(etc_ro_binds=(str(host_etc_entry),))
    host_etc_entry.write_text("aaa\n")
    stamp = host_etc_entry.stat().st_mtime_ns
    read = f"#!/bin/bash\ncat {host_etc_entry} >&2\n"
    assert run(read, sandbox=config).stderr == "aaa\n"
    host_etc_entry.write_text("bbb\n")  # same size, same inode
    os.utime(host_etc_entry, ns=(stamp, stamp))
    assert run(read, sandbox=config).stderr == "bbb\n"


def test_a_host_entry_others_cannot_read_is_not_copied(host_etc_entry: Path) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    host_etc_entry.write_text(secret)
    host_etc_entry.chmod(0o600)
    readable = host_etc_entry.with_name(host_etc_entry.name + "-public")
    readable.write_text("public\n")
    try:
        config = SandboxConfig(etc_ro_binds=(str(host_etc_entry) + "*",))
        result = run(
            f"#!/bin/bash\ncat {readable} >&2\ncat {host_etc_entry} >/dev/null 2>&1 || echo REFUSED >&2\n",
            sandbox=config,
        )
        assert result.stderr.split() == ["public", "REFUSED"]
        # No copy of the secret anywhere in the prepared directories on the host.
        for snapshot in Path(tempfile.gettempdir()).glob("console-hook-etc-*"):
            for path in snapshot.rglob("*"):
                assert not (path.is_file() and secret in path.read_text(errors="replace"))
    finally:
        readable.unlink()


@pytest.fixture
def public_scratch() -> Iterator[Path]:
    """A scratch directory host nobody can reach (a root agent's bwrap runs as nobody, and
    pytest's own temporary directories are private to root) outside /tmp (the sandbox's
    own /tmp hides the host's)."""
    path = Path(tempfile.mkdtemp(prefix="console-hook-test-", dir="/var/tmp"))  # noqa: S108
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.usefixtures("trust_any_mtime")
def test_a_new_glob_match_outside_etc_is_bound_by_the_next_run(public_scratch: Path) -> None:
    source = public_scratch / "shared"
    source.mkdir(mode=0o755)
    set_old_mtime(source, 60)  # old enough for the matches to be cached
    config = SandboxConfig(etc_ro_binds=(str(source / "x*"),))
    probe = f"#!/bin/bash\ncat {source}/x1 >&2 2>/dev/null || echo MISSING >&2\n"
    assert run(probe, sandbox=config).stderr.split() == ["MISSING"]
    (source / "x1").write_text("found\n")
    (source / "x1").chmod(0o644)
    assert run(probe, sandbox=config).stderr.split() == ["found"]


@as_root
def test_a_private_temp_dir_is_not_used_for_a_root_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host nobody starts bwrap and must reach the prepared /etc: a TMPDIR only root can
    search is passed over for one everybody can."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    result = run("#!/bin/bash\ncat /etc/hostname >&2\n")
    assert result.stderr == "hook\n"
    assert not list(private.iterdir())


def test_the_prepared_etc_is_removed_when_the_agent_exits(public_scratch: Path) -> None:
    code = (
        "import glob, os, sys\n"
        "from console_client import run_command_hook\n"
        "r = run_command_hook({'type': 'command', 'command': 'exit 0'}, {})\n"
        "assert r.error is None, r\n"
        "print(len(glob.glob(os.path.join(sys.argv[1], 'console-hook-etc-*'))))\n"
    )
    env = {**os.environ, "TMPDIR": str(public_scratch)}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])
    env.pop(UNSANDBOXED_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", code, str(public_scratch)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"  # it had one while it ran
    assert list(public_scratch.iterdir()) == []


def _snapshot_owner(scratch: Path, then: str) -> subprocess.Popen[str]:
    """A process that builds its prepared /etc in `scratch`, then runs `then`."""
    code = (
        "import os, signal, sys, time\n"
        "from console_client import run_command_hook\n"
        "r = run_command_hook({'type': 'command', 'command': 'exit 0'}, {})\n"
        "assert r.error is None, r\n"
        "print('built', flush=True)\n" + then
    )
    env = {**os.environ, "TMPDIR": str(scratch)}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])
    env.pop(UNSANDBOXED_ENV, None)
    owner = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None and owner.stdout.readline() == "built\n"
    return owner


def test_snapshots_left_by_a_killed_agent_are_removed_and_live_ones_kept(
    public_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = _snapshot_owner(public_scratch, "os.kill(os.getpid(), signal.SIGKILL)\n")
    killed.wait()
    (stale,) = public_scratch.iterdir()  # no exit handler ran
    # Never touched: a snapshot still being built (no lock file yet), another user's.
    building = public_scratch / f"{sandbox_etc.PREFIX}building"
    building.mkdir()
    kept = {building}
    if os.geteuid() == 0:
        foreign = public_scratch / f"{sandbox_etc.PREFIX}foreign"
        shutil.copytree(stale, foreign, symlinks=True)
        os.chown(foreign, 65534, 65534)
        kept.add(foreign)
    # The next agent that builds its snapshot there removes the stale one.
    live = _snapshot_owner(public_scratch, "time.sleep(60)\n")
    try:
        assert not stale.exists()
        (live_snapshot,) = set(public_scratch.iterdir()) - kept
        # and this process, building its own, leaves the live agent's alone.
        snapshots = sandbox_etc.EtcSnapshots()
        monkeypatch.setattr(sandbox, "ETC_SNAPSHOTS", snapshots)
        monkeypatch.setattr(tempfile, "tempdir", str(public_scratch))
        try:
            assert run("#!/bin/bash\ncat /etc/hostname >&2\n").stderr == "hook\n"
            assert len(set(public_scratch.iterdir()) - kept - {live_snapshot}) == 1
        finally:
            snapshots._remove_all()
        assert live_snapshot.exists() and all(path.exists() for path in kept)
    finally:
        live.kill()
        live.wait()
    assert sandbox_etc.remove_stale(str(public_scratch)) == 1  # the live agent's, now stale
    assert set(public_scratch.iterdir()) == kept


# -- the process itself ------------------------------------------------------------------


def test_a_process_that_cannot_be_started_is_a_spawn_error() -> None:
    invocation = Invocation(
        argv=["/nonexistent/program"], env={}, cwd="/", stdin=b"{}", sandboxed=False
    )
    before = len(os.listdir("/proc/self/fd"))
    run_ = asyncio.run(execute(invocation, wall_clock_s=5, stdout_max=100, stderr_max=100))
    assert run_.spawn_error is not None and "FileNotFoundError" in run_.spawn_error
    assert len(os.listdir("/proc/self/fd")) == before  # no pipe left open
