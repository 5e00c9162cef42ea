"""The command-hook sandbox: bubblewrap namespaces plus resource limits, and the process
runner that enforces the hook's wall-clock timeout and output caps.

A hook runs as `bwrap <namespaces, mounts> -- prlimit <limits> -- <program>`:

- every namespace unshared (no network but a private loopback, own PID tree, own
  hostname), no capabilities, no new privileges, no nested user namespaces, uid/gid nobody;
- a read-only /usr (with the /bin, /lib... links), a synthesized minimal /etc, fresh /proc
  and /dev, a size-limited private /tmp, the hook script and a copy of the transcript at
  fixed read-only paths, and nothing else of the host;
- an environment of PATH, HOME=/tmp and LANG only;
- RLIMIT_CPU/AS/NPROC/FSIZE/NOFILE/CORE set by prlimit inside the new user namespace,
  so RLIMIT_NPROC counts the sandbox's own processes (set outside, it would count every
  process of the host user, and a busy agent user could not start a hook at all).

When the agent runs as root, bwrap itself is started as the host user nobody: the kernel
does not enforce RLIMIT_NPROC for processes whose host uid is 0, so a fork bomb would not
be contained.

The only way to run a hook without this is `CONSOLE_HOOKS_UNSANDBOXED=1` (a development
switch that logs a warning on every run). A sandbox that cannot be built is a hook error.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import logging
import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

logger = logging.getLogger(__name__)

UNSANDBOXED_ENV = "CONSOLE_HOOKS_UNSANDBOXED"
SANDBOX_SCRIPT_PATH = "/hook/script"
SANDBOX_TRANSCRIPT_PATH = "/hook/transcript.jsonl"
SANDBOX_TMP = "/tmp"  # noqa: S108 - inside the sandbox: a private, size-limited tmpfs
SHEBANGS = ("#!/bin/bash", "#!/usr/bin/env python3")
MIB = 1024 * 1024
_DRAIN_AFTER_KILL_S = 1.0

_ETC_FILES = {
    "/etc/group": "root:x:0:\nnogroup:x:{gid}:\n",
    "/etc/passwd": (
        "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:{uid}:{gid}:nobody:/tmp:/usr/sbin/nologin\n"
    ),
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
    "/etc/hostname": "hook\n",
    "/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
}


class SandboxError(Exception):
    """The sandbox cannot be built (bwrap or prlimit missing, a bind source missing...)."""


@dataclass(frozen=True)
class SandboxConfig:
    """Where bubblewrap is, what the hook sees and the limits it runs under."""

    bwrap_path: str = "/usr/bin/bwrap"
    prlimit_path: str = "/usr/bin/prlimit"
    memory_bytes: int = 512 * MIB  # RLIMIT_AS
    max_processes: int = 64  # RLIMIT_NPROC
    file_size_bytes: int = 16 * MIB  # RLIMIT_FSIZE
    open_files: int = 256  # RLIMIT_NOFILE
    cpu_seconds: int | None = None  # RLIMIT_CPU; None: the hook's timeout + 1 s
    tmp_size_bytes: int = 64 * MIB
    sandbox_uid: int = 65534
    sandbox_gid: int = 65534
    # Host ids bwrap runs as when the agent is root (None keeps root).
    host_uid: int | None = 65534
    host_gid: int | None = 65534
    path_env: str = "/usr/local/bin:/usr/bin:/bin"
    system_ro_binds: tuple[str, ...] = ("/usr",)
    # Bound or re-created as the same symlink, whichever the host has (merged /usr or not).
    system_links: tuple[str, ...] = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
    etc_ro_binds: tuple[str, ...] = (
        "/etc/ld.so.cache",
        "/etc/alternatives",
        "/etc/localtime",
        "/etc/python3*",
    )
    extra_ro_binds: tuple[tuple[str, str], ...] = ()
    stdout_max_bytes: int = MIB
    stderr_max_bytes: int = MIB
    transcript_max_bytes: int = 32 * MIB


def unsandboxed_requested(environ: Mapping[str, str] | None = None) -> bool:
    """True only when the operator set CONSOLE_HOOKS_UNSANDBOXED=1."""
    return (os.environ if environ is None else environ).get(UNSANDBOXED_ENV, "") == "1"


@dataclass(frozen=True)
class HookProgram:
    """What to run: an inline `command` (bash -c) or a `script` run by its shebang."""

    kind: Literal["command", "script"]
    source: str


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    stdin: bytes
    sandboxed: bool
    pass_fds: tuple[int, ...] = ()
    user: int | None = None
    group: int | None = None


@dataclass
class Execution:
    """What happened to one process: exit code (None if it was killed by us), capped output."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stdout_overflow: bool = False
    stderr_truncated: bool = False
    spawn_error: str | None = None
    duration_ms: float = 0.0


def _rlimit_args(config: SandboxConfig, timeout: float, *, nproc: bool = True) -> list[str]:
    cpu = config.cpu_seconds if config.cpu_seconds is not None else int(timeout) + 1
    return [
        config.prlimit_path,
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={config.memory_bytes}",
        *([f"--nproc={config.max_processes}"] if nproc else []),
        f"--fsize={config.file_size_bytes}",
        f"--nofile={config.open_files}",
        "--core=0",
        "--",
    ]


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def _bwrap_args(
    config: SandboxConfig,
    fds: list[int],
    program: HookProgram,
    transcript: str | None,
    timeout: float,
) -> list[str]:
    def data_file(fd: int, dest: str, perms: str) -> list[str]:
        fds.append(fd)
        return ["--perms", perms, "--file", str(fd), dest]

    args = [
        config.bwrap_path,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(config.sandbox_uid),
        "--gid",
        str(config.sandbox_gid),
        "--hostname",
        "hook",
    ]
    for path in config.system_ro_binds:
        args += ["--ro-bind", path, path]
    for path in config.system_links:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--dir", "/etc"]
    for pattern in config.etc_ro_binds:
        for path in sorted(glob.glob(pattern)):
            args += ["--ro-bind", path, path]
    for dest, template in _ETC_FILES.items():
        text = template.format(uid=config.sandbox_uid, gid=config.sandbox_gid)
        args += data_file(_memfd("etc", text.encode()), dest, "0444")
    for source, dest in config.extra_ro_binds:
        args += ["--ro-bind", source, dest]
    # /dev (and its /dev/shm) would be unbounded writable memory: read-only like the root.
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    args += ["--size", str(config.tmp_size_bytes), "--tmpfs", SANDBOX_TMP]
    if program.kind == "script":
        args += data_file(_memfd("script", program.source.encode()), SANDBOX_SCRIPT_PATH, "0555")
    transcript_fd = _open_transcript(transcript, config.transcript_max_bytes)
    args += data_file(transcript_fd, SANDBOX_TRANSCRIPT_PATH, "0444")
    # Everything bwrap created above lives on its root tmpfs: make that read-only too.
    args += ["--remount-ro", "/", "--chdir", SANDBOX_TMP, "--clearenv"]
    for key, value in (("PATH", config.path_env), ("HOME", SANDBOX_TMP), ("LANG", "C.UTF-8")):
        args += ["--setenv", key, value]
    args.append("--")
    # The limits are set inside the new user namespace: RLIMIT_NPROC then counts the
    # sandbox's own processes, not every process of the host user.
    args += _rlimit_args(config, timeout)
    args += (
        [SANDBOX_SCRIPT_PATH] if program.kind == "script" else ["/bin/bash", "-c", program.source]
    )
    return args


def _open_transcript(path: str | None, max_bytes: int) -> int:
    """A read fd on the transcript for bwrap to copy in; an empty one when there is none.

    Only a regular file is accepted (a FIFO would hang the copy, /dev/zero never end it);
    beyond `max_bytes` only the newest part is copied.
    """
    if not path:
        return _memfd("transcript", b"")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return _memfd("transcript", b"")
    except OSError as exc:
        raise SandboxError(f"cannot read the transcript {path}: {exc.strerror}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise SandboxError(f"the transcript {path} is not a regular file")
    if info.st_size <= max_bytes:
        return fd
    try:
        os.lseek(fd, info.st_size - max_bytes, os.SEEK_SET)
        return _memfd("transcript", os.read(fd, max_bytes))
    finally:
        os.close(fd)


def _check_tools(config: SandboxConfig) -> None:
    for label, path in (("bubblewrap", config.bwrap_path), ("prlimit", config.prlimit_path)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SandboxError(f"{label} is not available at {path}")


@contextlib.contextmanager
def prepared_invocation(
    program: HookProgram,
    context: Mapping[str, Any],
    *,
    transcript_path: str | None,
    config: SandboxConfig,
    timeout: float,
    unsandboxed: bool = False,
) -> Iterator[Invocation]:
    """The process to start for `program`; closes fds and removes temp files afterwards."""
    if unsandboxed:
        with _unsandboxed_invocation(program, context, config, timeout) as invocation:
            yield invocation
        return
    _check_tools(config)
    fds: list[int] = []
    try:
        sandbox_context = dict(context)
        sandbox_context["execution_summary"] = SANDBOX_TRANSCRIPT_PATH
        transcript = transcript_path or _str_or_none(context.get("execution_summary"))
        try:
            argv = _bwrap_args(config, fds, program, transcript, timeout)
        except OSError as exc:
            raise SandboxError(f"cannot prepare the sandbox files: {exc}") from exc
        as_root = os.geteuid() == 0
        yield Invocation(
            argv=argv,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd="/",
            stdin=_context_bytes(sandbox_context),
            sandboxed=True,
            pass_fds=tuple(fds),
            user=config.host_uid if as_root else None,
            group=config.host_gid if as_root else None,
        )
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def _unsandboxed_invocation(
    program: HookProgram, context: Mapping[str, Any], config: SandboxConfig, timeout: float
) -> Iterator[Invocation]:
    logger.warning(
        "%s=1: running a command hook WITHOUT the sandbox (development only; the hook can "
        "read your files and reach the network).",
        UNSANDBOXED_ENV,
    )
    workdir = tempfile.mkdtemp(prefix="console-hook-")
    try:
        if program.kind == "script":
            script = os.path.join(workdir, "script")
            with open(os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700), "w") as fh:
                fh.write(program.source)
            target = [script]
        else:
            target = ["/bin/bash", "-c", program.source]
        # Outside a user namespace RLIMIT_NPROC would count every process of the host user.
        limits = (
            _rlimit_args(config, timeout, nproc=False)
            if os.access(config.prlimit_path, os.X_OK)
            else []
        )
        yield Invocation(
            argv=limits + target,
            env={"PATH": config.path_env, "HOME": workdir, "LANG": "C.UTF-8"},
            cwd=workdir,
            stdin=_context_bytes(context),
            sandboxed=False,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _context_bytes(context: Mapping[str, Any]) -> bytes:
    return json.dumps(context, ensure_ascii=False, default=str).encode("utf-8")


@dataclass
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    @property
    def overflowed(self) -> bool:
        return self.total > self.limit


async def _capture(
    stream: asyncio.StreamReader, capture: _Capture, on_overflow: Callable[[], None] | None
) -> None:
    while chunk := await stream.read(64 * 1024):
        room = capture.limit - len(capture.data)
        if room > 0:
            capture.data += chunk[:room]
        capture.total += len(chunk)
        if capture.overflowed and on_overflow is not None:
            on_overflow()
            on_overflow = None


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    # A hook that never reads its stdin must not fail the run.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _exited(pid: int) -> None:
    """Return once `pid` has exited. (asyncio's `Process.wait()` also waits for the pipes to
    close, which a background child holding them open would delay until the timeout.)"""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def on_exit() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(pidfd, on_exit)
    try:
        await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


async def execute(
    invocation: Invocation, *, wall_clock_s: float, stdout_max: int, stderr_max: int
) -> Execution:
    """Run the invocation in its own session; kill the whole group after `wall_clock_s`;
    always reap."""
    started = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(
            *invocation.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=invocation.env,
            cwd=invocation.cwd,
            pass_fds=invocation.pass_fds,
            start_new_session=True,
            user=invocation.user,
            group=invocation.group,
            extra_groups=[] if invocation.group is not None else None,
        )
    except (OSError, ValueError) as exc:
        return Execution(None, b"", b"", spawn_error=f"{type(exc).__name__}: {exc}")
    assert proc.stdin and proc.stdout and proc.stderr
    out, err = _Capture(stdout_max), _Capture(stderr_max)
    tasks = [
        asyncio.create_task(_feed(proc.stdin, invocation.stdin)),
        asyncio.create_task(_capture(proc.stdout, out, lambda: _kill_group(proc.pid))),
        asyncio.create_task(_capture(proc.stderr, err, None)),
    ]
    timed_out = False
    try:
        async with asyncio.timeout(wall_clock_s):
            await _exited(proc.pid)
            # Background children left in the group would hold the pipes open.
            _kill_group(proc.pid)
            await asyncio.gather(*tasks)
            await proc.wait()
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(proc.pid)
        await proc.wait()
        if not all(task.done() for task in tasks):
            await asyncio.wait(tasks, timeout=_DRAIN_AFTER_KILL_S)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return Execution(
        exit_code=None if timed_out else proc.returncode,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        timed_out=timed_out,
        stdout_overflow=out.overflowed,
        stderr_truncated=err.overflowed,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
