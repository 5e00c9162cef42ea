"""A live console for end-to-end tests: daphne (ASGI, so the long-poll works) in a
subprocess on a free loopback port, against this run's PostgreSQL test database.

Tests that use it need `transactional_db` so what they write is committed and visible to
the server process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 30


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_database_url() -> str:
    """This run's PostgreSQL test database as a URL (the console's, unless told otherwise)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("end-to-end tests need PostgreSQL (set DATABASE_URL)")
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{connection.settings_dict['NAME']}"


class LiveConsole:
    def __init__(self, url: str, process: subprocess.Popen[bytes], port: int) -> None:
        self.url = url
        self.process = process
        self.port = port


def start_console(
    log_path: Path,
    timeout: float = START_TIMEOUT_SECONDS,
    *,
    database_url: str | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> LiveConsole:
    """daphne on a free port; on this run's test database unless `database_url` is given
    (e.g. through PgBouncer), with `extra_env` added to the environment."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url or run_database_url(),
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_LONGPOLL_MAX_SECONDS": os.environ.get("CONSOLE_LONGPOLL_MAX_SECONDS", "60"),
        **(extra_env or {}),
    }
    log = log_path.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "console.asgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the console exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code < 500:
                return LiveConsole(url, process, port)
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"the console did not start: {log_path.read_text()[-2000:]}")


def stop_console(console: LiveConsole) -> None:
    console.process.terminate()
    try:
        console.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        console.process.kill()
        console.process.wait(timeout=5)


@pytest.fixture(scope="session")
def live_console(
    django_db_setup: None, django_db_blocker: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveConsole]:
    console = start_console(tmp_path_factory.mktemp("console") / "daphne.log")
    try:
        yield console
    finally:
        stop_console(console)
