"""Real infrastructure for the scale-out tests: a private PgBouncer in transaction pooling
mode, and a private PostgreSQL primary with a streaming hot standby (pg_basebackup -R).

Loopback only; each process is started here and ended here by its own pid (or pg_ctl on its
own data directory). Under root, PgBouncer and PostgreSQL run as the `postgres` OS user
(neither runs as root). `make test` sets SCALEOUT_REQUIRED=1: there a missing binary fails
the test instead of skipping it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from bench.faults.procs import free_port, pg_bin

REQUIRED = os.environ.get("SCALEOUT_REQUIRED", "") == "1"
START_TIMEOUT_SECONDS = 30


def require(missing: str | None) -> None:
    """Skip (fail under `make test`) when something the test needs is not here."""
    if missing is None:
        return
    message = f"{missing} (make system-deps installs it)"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


def _owned_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")
    return path


def _as_postgres(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(args)]


def _wait_connectable(conninfo: str, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with psycopg.connect(conninfo, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"{what} did not accept connections:\n{text}") from None
            time.sleep(0.1)


def pgbouncer_binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(p).exists()), None
    )


class PgBouncer:
    """pgbouncer in front of `host:port`, transaction pooling, `pool_size` server
    connections per database and user, server connections handed out round-robin (so
    consecutive transactions of one client land on different server sessions: anything
    session-scoped the console relied on would break at once)."""

    def __init__(self, host: str, port: int, *, pool_size: int = 2) -> None:
        self.upstream = (host, port)
        self.pool_size = pool_size
        self.port = free_port()
        self.dir = _owned_dir("pgbouncer-")
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def missing() -> str | None:
        return None if pgbouncer_binary() else "pgbouncer is not installed"

    def url(self, dbname: str, user: str = "postgres") -> str:
        return f"postgres://{user}@127.0.0.1:{self.port}/{dbname}"

    def start(self, users: tuple[str, ...] = ("postgres",)) -> None:
        host, port = self.upstream
        (self.dir / "users.txt").write_text("".join(f'"{u}" ""\n' for u in users))
        (self.dir / "pgbouncer.ini").write_text(
            f"""[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.dir / "users.txt"}
pool_mode = transaction
default_pool_size = {self.pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
server_round_robin = 1
ignore_startup_parameters = extra_float_digits
logfile = {self.dir / "pgbouncer.log"}
pidfile = {self.dir / "pgbouncer.pid"}
admin_users = postgres
"""
        )
        for name in ("users.txt", "pgbouncer.ini"):
            if os.geteuid() == 0:
                shutil.chown(self.dir / name, "postgres", "postgres")
        binary = pgbouncer_binary()
        assert binary is not None
        args = [binary, str(self.dir / "pgbouncer.ini")]
        if os.geteuid() == 0:
            args[1:1] = ["-u", "postgres"]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=(self.dir / "stderr.log").open("wb")
        )
        _wait_connectable(
            f"host=127.0.0.1 port={self.port} dbname=postgres user=postgres",
            "pgbouncer",
            self.dir / "pgbouncer.log",
        )

    def show(self, what: str) -> list[dict[str, object]]:
        """`SHOW <what>` on PgBouncer's admin console (simple query protocol only)."""
        conninfo = f"host=127.0.0.1 port={self.port} dbname=pgbouncer user=postgres"
        with psycopg.connect(conninfo, autocommit=True) as conn:
            cursor = psycopg.ClientCursor(conn)
            cursor.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def log(self) -> str:
        path = self.dir / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


class StreamingPair:
    """A private primary (initdb, trust on loopback) and a hot standby of it made with
    `pg_basebackup -R` (streaming replication, read-only)."""

    def __init__(self) -> None:
        self.primary_port = free_port()
        self.standby_port = free_port()
        self.primary_dir = _owned_dir("pgprimary-")
        self.standby_dir = _owned_dir("pgstandby-")
        self.started: list[Path] = []

    @staticmethod
    def missing() -> str | None:
        for name in ("initdb", "pg_ctl", "pg_basebackup"):
            if pg_bin(name) is None:
                return f"{name} is not installed (PostgreSQL server binaries)"
        if os.geteuid() != 0 and os.environ.get("USER") != "postgres":
            return "a private PostgreSQL cluster needs root (to run it as postgres) or postgres"
        return None

    def url(self, dbname: str, *, standby: bool = False) -> str:
        port = self.standby_port if standby else self.primary_port
        return f"postgres://postgres@127.0.0.1:{port}/{dbname}"

    def _run(self, *args: str) -> None:
        done = subprocess.run(_as_postgres(list(args)), capture_output=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout[-1000:]!r} {done.stderr[-2000:]!r}")

    def _start(self, datadir: Path, port: int) -> None:
        options = f"'-p {port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off'"
        self._run(str(pg_bin("pg_ctl")), "-D", str(datadir), "-o", options,
                  "-l", str(datadir / "server.log"), "-w", "start")  # fmt: skip
        self.started.append(datadir)

    def start(self) -> None:
        self._run(str(pg_bin("initdb")), "-D", str(self.primary_dir), "-U", "postgres",
                  "--auth=trust", "--no-sync")  # fmt: skip
        self._start(self.primary_dir, self.primary_port)
        # -R writes primary_conninfo and standby.signal: the copy starts as a hot standby
        # that streams the primary's WAL from then on.
        self._run(str(pg_bin("pg_basebackup")), "-h", "127.0.0.1", "-p", str(self.primary_port),
                  "-U", "postgres", "-D", str(self.standby_dir), "-R", "-X", "stream",
                  "--checkpoint=fast", "--no-sync")  # fmt: skip
        self._start(self.standby_dir, self.standby_port)

    def stop(self) -> None:
        for datadir in reversed(self.started):
            with contextlib.suppress(Exception):
                self._run(str(pg_bin("pg_ctl")), "-D", str(datadir), "-m", "immediate",
                          "-w", "stop")  # fmt: skip
        for datadir in (self.primary_dir, self.standby_dir):
            shutil.rmtree(datadir, ignore_errors=True)
