"""Processes the fault runs start and break: a private Redis, a private PostgreSQL cluster,
the console under daphne, Celery worker and beat. Loopback only; every process is tracked
and ended at exit (atexit + the callers' try/finally), by its own pid, never by name.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def shared_pg_server() -> str:
    """The PostgreSQL server of DATABASE_URL (the machine's cluster), without a database."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        return url.rsplit("/", 1)[0]
    return "postgres://postgres@127.0.0.1:5432"


_started: list[subprocess.Popen[bytes]] = []
_cleanups: list[Any] = []


def _end_all() -> None:
    for cleanup in reversed(_cleanups):
        with contextlib.suppress(Exception):
            cleanup()
    for process in _started:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                process.wait(timeout=5)


atexit.register(_end_all)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spawn(
    args: list[str], *, env: dict[str, str] | None = None, log: Path
) -> subprocess.Popen[bytes]:
    """Start a process in its own process group (so its children end with it)."""
    handle = log.open("ab")
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
    )
    handle.close()
    _started.append(process)
    return process


def end(
    process: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM, wait: float = 15
) -> None:
    """Signal the process group, wait, then SIGKILL what is left."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


ACCESS_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+)" (?P<status>\d{3}) \d+$')


def http_statuses(log: Path, offset: int = 0, path_prefix: str = "") -> dict[str, int]:
    """Status counts from daphne's access log (from `offset` bytes on), for paths that start
    with `path_prefix`."""
    counts: dict[str, int] = {}
    if not log.exists():
        return counts
    with log.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    for line in text.splitlines():
        found = ACCESS_LINE.search(line)
        if found and found.group("path").startswith(path_prefix):
            counts[found.group("status")] = counts.get(found.group("status"), 0) + 1
    return counts


def wait_until(check: Any, *, timeout: float, what: str, step: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(step)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s")


# ---- Redis -------------------------------------------------------------------------------


class RedisServer:
    """A private redis-server on a loopback port; no persistence (a kill loses its queues)."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self.workdir)]
        self.process = spawn(args, log=self.workdir / f"redis-{self.port}.log")
        wait_until(self.ping, timeout=10, what="redis")

    def ping(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")

    def kill(self) -> None:
        end(self.process, signal.SIGKILL)


# ---- PostgreSQL --------------------------------------------------------------------------


def _psql(url: str, sql: str) -> None:
    subprocess.run(["psql", url, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                   capture_output=True)  # fmt: skip


def recreate_database(server_url: str, name: str) -> str:
    _psql(f"{server_url}/postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _psql(f"{server_url}/postgres", f'CREATE DATABASE "{name}"')
    return f"{server_url}/{name}"


def drop_database(server_url: str, name: str) -> None:
    with contextlib.suppress(subprocess.CalledProcessError):
        _psql(f"{server_url}/postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_bin(name: str) -> str | None:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(found[-1]) if found else shutil.which(name)


class PgCluster:
    """A throwaway cluster owned by the `postgres` OS user, restarted with `-m immediate`."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.datadir = Path(tempfile.mkdtemp(prefix="pgfault-"))
        self.initdb, self.pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")

    @classmethod
    def available(cls) -> str | None:
        """None when a private cluster can be made here, else why not."""
        if pg_bin("initdb") is None or pg_bin("pg_ctl") is None:
            return "initdb/pg_ctl not installed"
        if os.geteuid() != 0 and os.environ.get("USER") != "postgres":
            return "needs root (to run initdb as the postgres user) or the postgres user"
        return None

    @property
    def server_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}"

    def _as_postgres(self, *args: str, timeout: float = 60) -> None:
        command = list(args)
        if os.geteuid() == 0:
            command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(args)]
        subprocess.run(command, check=True, capture_output=True, timeout=timeout)

    def create(self) -> None:
        _cleanups.append(self.remove)
        if os.geteuid() == 0:
            shutil.chown(self.datadir, "postgres", "postgres")
        self._as_postgres(str(self.initdb), "-D", str(self.datadir), "-U", "postgres",
                          "--auth=trust", "--no-sync")  # fmt: skip
        options = f"'-p {self.port} -k /tmp -c listen_addresses=127.0.0.1'"
        self._as_postgres(str(self.pg_ctl), "-D", str(self.datadir), "-o", options,
                          "-l", str(self.datadir / "server.log"), "-w", "start")  # fmt: skip

    def restart_immediate(self) -> float:
        """`pg_ctl -m immediate restart`; returns the seconds it took."""
        started = time.monotonic()
        self._as_postgres(str(self.pg_ctl), "-D", str(self.datadir), "-m", "immediate",
                          "-l", str(self.datadir / "server.log"), "-w", "restart")  # fmt: skip
        return time.monotonic() - started

    def remove(self) -> None:
        if (self.datadir / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self._as_postgres(str(self.pg_ctl), "-D", str(self.datadir), "-m", "immediate",
                                  "-w", "stop", timeout=30)  # fmt: skip
        shutil.rmtree(self.datadir, ignore_errors=True)


# ---- the console -------------------------------------------------------------------------


@dataclass
class Provisioned:
    """What provision.py created: tokens are plaintext, shown to this run only."""

    agent: str
    agent_token: str
    reviewer_token: str
    reviewer_sessions: list[str] = field(default_factory=list)


def console_env(database_url: str, redis_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="console.settings",
        PYTHONPATH=str(ROOT),
        LOG_LEVEL=env.get("FAULTS_LOG_LEVEL", "WARNING"),
        CHANNELS_PREFIX="faults",
        # daphne's access log is counted afterwards: nothing may sit in a buffer at SIGKILL.
        PYTHONUNBUFFERED="1",
        **extra,
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def provision(env: dict[str, str], *, sessions: int = 0, approval_tools: str = "") -> Provisioned:
    """Migrate and create the agent, a reviewer and (optionally) an approval hook."""
    args = [PY, str(ROOT / "bench" / "faults" / "provision.py"), "--sessions", str(sessions)]
    if approval_tools:
        args += ["--approval-tools", approval_tools]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"provision failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return Provisioned(**json.loads(done.stdout.strip().splitlines()[-1]))


class Console:
    """daphne serving console.asgi on a loopback port; stop() and start() keep the port."""

    def __init__(self, env: dict[str, str], workdir: Path, port: int | None = None) -> None:
        self.env = env
        self.port = port or free_port()
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> float:
        started = time.monotonic()
        args = [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        args += ["--http-timeout", "120", "console.asgi:application"]
        self.process = spawn(args, env=self.env, log=self.workdir / "daphne.log")

        def healthy() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log_tail()}")
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200

        wait_until(healthy, timeout=timeout, what="the console")
        return time.monotonic() - started

    def stop(self, sig: int = signal.SIGKILL) -> None:
        end(self.process, sig)

    @property
    def log(self) -> Path:
        return self.workdir / "daphne.log"

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def log_tail(self, size: int = 3000) -> str:
        path = self.log
        return path.read_text(errors="replace")[-size:] if path.exists() else ""


class Celery:
    """`celery -A console worker` (prefork, 2 children) and, separately, `celery beat`."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = env
        self.workdir = workdir
        self.worker: subprocess.Popen[bytes] | None = None
        self.beat: subprocess.Popen[bytes] | None = None

    def start_worker(self) -> None:
        args = [PY, "-m", "celery", "-A", "console", "worker", "-l", "warning", "-P", "prefork"]
        args += ["-c", "2", "-n", f"faults-{os.getpid()}-{time.monotonic_ns()}@%h"]
        self.worker = spawn(args, env=self.env, log=self.workdir / "worker.log")

    def start_beat(self) -> None:
        args = [PY, "-m", "celery", "-A", "console", "beat", "-l", "warning"]
        args += ["-s", str(self.workdir / "beat-schedule"), "--pidfile", ""]
        self.beat = spawn(args, env=self.env, log=self.workdir / "beat.log")

    def worker_children(self) -> list[int]:
        if self.worker is None:
            return []
        found = subprocess.run(
            ["pgrep", "-P", str(self.worker.pid)], capture_output=True, text=True
        )
        return [int(pid) for pid in found.stdout.split()]

    def kill_worker(self) -> None:
        end(self.worker, signal.SIGKILL)

    def stop(self) -> None:
        end(self.worker)
        end(self.beat)
