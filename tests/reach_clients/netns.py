"""A network namespace that has only loopback, for running real agent clients.

`unshare -n` starts a holder process whose namespace has nothing but `lo` (brought up by
`ip link set lo up`). Threads of the test process enter it with `setns(2)`: every socket a
thread creates in there (a listening socket of the scripted model endpoint, a request to the
console) and every process it starts (daphne, `claude`, `codex`) lives in that namespace, so
nothing the clients do can leave the machine, while the test process itself keeps its own
network (PostgreSQL over TCP for pytest-django). A console inside reaches PostgreSQL over its
unix socket, which does not depend on the network namespace.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class LoopbackNamespace:
    """A loopback-only network namespace and a pool of threads that run inside it."""

    def __init__(self, workers: int = 4) -> None:
        self._holder = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && echo up && exec sleep 86400"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self._holder.stdout is not None
        if self._holder.stdout.readline().strip() != b"up":
            self._holder.wait(timeout=5)
            assert self._holder.stderr is not None
            raise RuntimeError(
                f"cannot create a network namespace: {self._holder.stderr.read().decode()}"
            )
        self._fd = os.open(f"/proc/{self._holder.pid}/ns/net", os.O_RDONLY)
        self._pool = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="netns", initializer=self._enter
        )

    def _enter(self) -> None:
        os.setns(self._fd, os.CLONE_NEWNET)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn` on a thread inside the namespace and return its result."""
        return self._pool.submit(fn, *args, **kwargs).result()

    def thread(self, fn: Callable[[], None], name: str) -> threading.Thread:
        """Start a daemon thread inside the namespace (e.g. a server loop)."""

        def run() -> None:
            self._enter()
            fn()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        return thread

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start a process inside the namespace."""
        return self.call(subprocess.Popen, args, **kwargs)

    def run(self, args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        """Run a process inside the namespace to completion."""
        return self.call(subprocess.run, args, **kwargs)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._holder.kill()
        self._holder.wait(timeout=5)
        os.close(self._fd)
