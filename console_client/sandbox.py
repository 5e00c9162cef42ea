"""The command-hook sandbox: bubblewrap namespaces plus resource limits, built into an
`Invocation` (console_client.sandbox_run runs it, with the wall-clock timeout and the
output caps).

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

import contextlib
import glob
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from console_client.sandbox_etc import SNAPSHOTS as ETC_SNAPSHOTS
from console_client.sandbox_etc import EtcSnapshot, glob_stamp, settled

logger = logging.getLogger(__name__)

UNSANDBOXED_ENV = "CONSOLE_HOOKS_UNSANDBOXED"
SANDBOX_SCRIPT_PATH = "/hook/script"
SANDBOX_TRANSCRIPT_PATH = "/hook/transcript.jsonl"
SANDBOX_TMP = "/tmp"  # noqa: S108 - inside the sandbox: a private, size-limited tmpfs
SHEBANGS = ("#!/bin/bash", "#!/usr/bin/env python3")
MIB = 1024 * 1024

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
    # util-linux unshare (no namespace, only --setgid/--setuid): how a root agent starts
    # bwrap as host_uid/host_gid with one small exec in a vfork child; without it the child
    # must fork the whole agent to switch ids.
    unshare_path: str = "/usr/bin/unshare"
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
    # Host ids to start argv as (a root agent's sandbox), and unshare to switch to them.
    user: int | None = None
    group: int | None = None
    unshare_path: str | None = None

    def spawn_args(self) -> tuple[list[str], dict[str, Any]]:
        """The argv and the `subprocess.Popen` id arguments that start this invocation as
        `user`/`group`: through unshare when there is one (the child is then a vfork, an
        exec of unshare and one of bwrap), else by `subprocess` itself (which must fork
        the whole parent process to change ids in the child)."""
        if self.user is None and self.group is None:
            return self.argv, {}
        if self.unshare_path is not None:
            return _switch_ids_args(self.unshare_path, self.user, self.group) + self.argv, {}
        ids = {"user": self.user, "group": self.group}
        return self.argv, {**ids, "extra_groups": [] if self.group is not None else None}


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


# The argv parts that depend only on the config and the host's layout (which of /bin,
# /lib... are symlinks, which /etc/python3* exist), keyed by the mtimes of / and of the
# directories the etc_ro_binds patterns are matched in: any change there (a new
# python3.x, a replaced link) rebuilds them.
@dataclass(frozen=True)
class _StaticArgs:
    head: tuple[str, ...]  # namespaces, identity, /usr and the /bin, /lib... links
    etc_binds: tuple[str, ...]  # the etc_ro_binds matches, when /etc is prepared per run
    tail: tuple[str, ...]  # extra binds, /proc, /dev, /tmp


_static_args_cache: dict[SandboxConfig, tuple[tuple[int, tuple[int, ...]], _StaticArgs]] = {}


def _static_args(config: SandboxConfig) -> _StaticArgs:
    globbed = glob_stamp(config.etc_ro_binds)
    root_mtime = os.stat("/").st_mtime_ns
    stamp = None
    if globbed is not None and settled((root_mtime, *globbed)):
        stamp = (root_mtime, globbed)
    cached = _static_args_cache.get(config)
    if stamp is not None and cached is not None and cached[0] == stamp:
        return cached[1]
    head = [
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
        head += ["--ro-bind", path, path]
    for path in config.system_links:
        if os.path.islink(path):
            head += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            head += ["--ro-bind", path, path]
    etc_binds: list[str] = []
    for pattern in config.etc_ro_binds:
        for path in sorted(glob.glob(pattern)):
            etc_binds += ["--ro-bind", path, path]
    tail: list[str] = []
    for source, dest in config.extra_ro_binds:
        tail += ["--ro-bind", source, dest]
    # /dev (and its /dev/shm) would be unbounded writable memory: read-only like the root.
    tail += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    tail += ["--size", str(config.tmp_size_bytes), "--tmpfs", SANDBOX_TMP]
    result = _StaticArgs(tuple(head), tuple(etc_binds), tuple(tail))
    if stamp is not None:
        _static_args_cache[config] = (stamp, result)
    return result


def _etc_files(config: SandboxConfig) -> dict[str, bytes]:
    return {
        dest: template.format(uid=config.sandbox_uid, gid=config.sandbox_gid).encode()
        for dest, template in _ETC_FILES.items()
    }


def _program_argv(program: HookProgram) -> list[str]:
    """What prlimit executes. A script whose first line is exactly one of SHEBANGS gets the
    argv the kernel's shebang handling would build, minus the trampoline: `/bin/bash
    /hook/script`, and `python3 /hook/script` found on PATH by prlimit's execvp exactly as
    `/usr/bin/env python3` would (one exec fewer). Anything else is executed as the file."""
    if program.kind == "command":
        return ["/bin/bash", "-c", program.source]
    first_line = program.source.split("\n", 1)[0].rstrip(" \t")
    if first_line == "#!/bin/bash":
        return ["/bin/bash", SANDBOX_SCRIPT_PATH]
    if first_line == "#!/usr/bin/env python3":
        return ["python3", SANDBOX_SCRIPT_PATH]
    return [SANDBOX_SCRIPT_PATH]


def _bwrap_args(
    config: SandboxConfig,
    fds: list[int],
    program: HookProgram,
    transcript: str | None,
    timeout: float,
    etc: EtcSnapshot | None,
) -> list[str]:
    def data_file(fd: int, dest: str, perms: str) -> list[str]:
        fds.append(fd)
        return ["--perms", perms, "--file", str(fd), dest]

    static = _static_args(config)
    args = list(static.head)
    if etc is not None:
        # The prepared /etc: one read-only bind instead of a dozen mount operations.
        args += ["--ro-bind", etc.path, "/etc"]
        for path in etc.binds:
            args += ["--ro-bind", path, path]
    else:
        args += ["--dir", "/etc", *static.etc_binds]
        for dest, text in _etc_files(config).items():
            args += data_file(_memfd("etc", text), dest, "0444")
    args += static.tail
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
    args += _program_argv(program)
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


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _check_tools(config: SandboxConfig) -> None:
    for label, path in (("bubblewrap", config.bwrap_path), ("prlimit", config.prlimit_path)):
        if not _executable(path):
            raise SandboxError(f"{label} is not available at {path}")


def _switch_ids_args(unshare: str, uid: int | None, gid: int | None) -> list[str]:
    """util-linux `unshare` with no namespace to create: setgroups(0, NULL) and setgid(gid)
    when a gid is given, setuid(uid) when a uid is given, then it executes bwrap. The same
    ids, and no supplementary groups, as `subprocess`'s user=/group=/extra_groups=[] (no
    name lookups, no locale: libc only)."""
    args = [unshare]
    if gid is not None:
        args.append(f"--setgid={gid}")
    if uid is not None:
        args.append(f"--setuid={uid}")
    return [*args, "--"]


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
    stack = contextlib.ExitStack()
    try:
        sandbox_context = dict(context)
        sandbox_context["execution_summary"] = SANDBOX_TRANSCRIPT_PATH
        transcript = transcript_path or _str_or_none(context.get("execution_summary"))
        as_root = os.geteuid() == 0
        other_user = as_root and (config.host_uid is not None or config.host_gid is not None)
        etc = stack.enter_context(
            ETC_SNAPSHOTS.acquire(_etc_files(config), config.etc_ro_binds, as_root=other_user)
        )
        try:
            argv = _bwrap_args(config, fds, program, transcript, timeout, etc)
        except OSError as exc:
            raise SandboxError(f"cannot prepare the sandbox files: {exc}") from exc
        yield Invocation(
            argv=argv,
            # No LANG: bwrap would load a dozen locale files for nothing.
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            stdin=_context_bytes(sandbox_context),
            sandboxed=True,
            pass_fds=tuple(fds),
            user=config.host_uid if as_root else None,
            group=config.host_gid if as_root else None,
            unshare_path=config.unshare_path if _executable(config.unshare_path) else None,
        )
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        stack.close()


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
