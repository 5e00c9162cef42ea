"""The process runner of command hooks: starts an `Invocation` (console_client.sandbox)
in its own session, feeds its stdin and reads its output from the event loop, caps the
output, kills the whole process group at the wall-clock timeout, and always reaps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

from console_client.sandbox import Invocation

_DRAIN_AFTER_KILL_S = 1.0


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


@dataclass
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    @property
    def overflowed(self) -> bool:
        return self.total > self.limit

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)


class _Pipes:
    """One hook process driven straight from the event loop: stdin fed and stdout/stderr
    read by fd callbacks (no transports, protocols or tasks in between), exit seen on a
    pidfd and reaped at once. `exited` and `drained` (both output pipes at EOF) are the two
    things `execute` waits for."""

    READ_SIZE = 256 * 1024

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        proc: subprocess.Popen[bytes],
        stdin: bytes,
        stdout_max: int,
        stderr_max: int,
    ) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        self.loop, self.proc = loop, proc
        self.out, self.err = _Capture(stdout_max), _Capture(stderr_max)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()
        self._files = {proc.stdin.fileno(): proc.stdin, proc.stdout.fileno(): proc.stdout}
        self._files[proc.stderr.fileno()] = proc.stderr
        self._readers: dict[int, _Capture] = {
            proc.stdout.fileno(): self.out,
            proc.stderr.fileno(): self.err,
        }
        self._stdout_fd = proc.stdout.fileno()
        self._pidfd: int | None = os.pidfd_open(proc.pid)
        loop.add_reader(self._pidfd, self._on_exit)
        for fd in self._files:
            os.set_blocking(fd, False)
        for fd in self._readers:
            loop.add_reader(fd, self._on_readable, fd)
        self._pending = memoryview(stdin)
        self._stdin_fd = proc.stdin.fileno()
        self._feed()

    def _close_fd(self, fd: int) -> None:
        file = self._files.pop(fd, None)
        if file is not None:
            file.close()

    def _feed(self) -> None:
        # A hook that never reads its stdin must not fail the run: EPIPE ends the feed.
        try:
            while self._pending:
                self._pending = self._pending[os.write(self._stdin_fd, self._pending) :]
        except BlockingIOError:
            if self._stdin_fd in self._files:
                self.loop.add_writer(self._stdin_fd, self._on_writable)
            return
        except OSError:
            self._pending = memoryview(b"")
        self._close_fd(self._stdin_fd)

    def _on_writable(self) -> None:
        self.loop.remove_writer(self._stdin_fd)
        self._feed()

    def _on_readable(self, fd: int) -> None:
        try:
            chunk = os.read(fd, self.READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.loop.remove_reader(fd)
            self._close_fd(fd)
            del self._readers[fd]
            if not self._readers and not self.drained.done():
                self.drained.set_result(None)
            return
        capture = self._readers[fd]
        was_over = capture.overflowed
        capture.add(chunk)
        if fd == self._stdout_fd and capture.overflowed and not was_over:
            _kill_group(self.proc.pid)

    def _on_exit(self) -> None:
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self.proc.poll()  # reaps it
        if not self.exited.done():
            self.exited.set_result(None)

    def close(self) -> None:
        if self._stdin_fd in self._files:
            self.loop.remove_writer(self._stdin_fd)
        for fd in list(self._readers):
            self.loop.remove_reader(fd)
        self._readers.clear()
        for fd in list(self._files):
            self._close_fd(fd)
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def execute(
    invocation: Invocation, *, wall_clock_s: float, stdout_max: int, stderr_max: int
) -> Execution:
    """Run the invocation in its own session; kill the whole group after `wall_clock_s`;
    always reap."""
    started = time.perf_counter()
    loop = asyncio.get_running_loop()
    try:
        # Started from the loop's thread like asyncio's own subprocess transport does (a
        # vfork and exec; bwrap's set-up runs after it returns).
        argv, ids = invocation.spawn_args()
        proc = subprocess.Popen(  # noqa: ASYNC220 - returns once the child has exec'd
            argv,
            bufsize=0,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=invocation.env,
            cwd=invocation.cwd,
            pass_fds=invocation.pass_fds,
            start_new_session=True,
            **ids,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return Execution(None, b"", b"", spawn_error=f"{type(exc).__name__}: {exc}")
    try:
        pipes = _Pipes(loop, proc, invocation.stdin, stdout_max, stderr_max)
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        for file in (proc.stdin, proc.stdout, proc.stderr):
            if file is not None:
                file.close()
        raise
    timed_out = False
    # Shielded: a timeout or a cancellation must not cancel the futures the finally clause
    # still waits on.
    try:
        async with asyncio.timeout(wall_clock_s):
            await asyncio.shield(pipes.exited)
            # Background children left in the group would hold the pipes open.
            _kill_group(proc.pid)
            await asyncio.shield(pipes.drained)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(proc.pid)
        await asyncio.shield(pipes.exited)
        if not pipes.drained.done():
            await asyncio.wait([pipes.drained], timeout=_DRAIN_AFTER_KILL_S)
        pipes.close()
    return Execution(
        exit_code=None if timed_out else proc.returncode,
        stdout=bytes(pipes.out.data),
        stderr=bytes(pipes.err.data),
        timed_out=timed_out,
        stdout_overflow=pipes.out.overflowed,
        stderr_truncated=pipes.err.overflowed,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
