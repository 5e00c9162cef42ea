"""Servers the real-client tests run inside the loopback-only namespace: the console (daphne on
the test database, reached over PostgreSQL's unix socket) and a hook recorder (a stand-in for
the console that answers hook requests from a test's function, to pin each client's wire
format independently of the console)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from django.db import connection

from tests.reach_clients.netns import LoopbackNamespace

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 60


def free_port() -> int:
    """A free port on 127.0.0.1 (call it inside the namespace)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unix_socket_database_url() -> str:
    """The test database over PostgreSQL's unix socket: a socket file does not depend on the
    network namespace, so a console inside the loopback-only namespace can reach a server
    that listens on the host's 127.0.0.1."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW unix_socket_directories")
        directories = str(cursor.fetchone()[0])
    directory = directories.split(",")[0].strip()
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = directory.replace("/", "%2F")
    return f"postgres://{user}{password}@{host}/{db['NAME']}"


class NamespaceConsole:
    """The console served by daphne inside the namespace; `api` calls it from in there."""

    def __init__(self, namespace: LoopbackNamespace, log_path: Path) -> None:
        self.namespace = namespace
        self.log_path = log_path
        self.port = namespace.call(free_port)
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            key: value
            for key, value in os.environ.items()
            # Redis listens on the host's loopback only: inside, the console runs on the
            # in-memory channel layer and in-process tasks (one process serves every call).
            if key not in ("REDIS_URL", "CHANNELS_PREFIX")
        }
        env.update(
            DATABASE_URL=unix_socket_database_url(),
            DJANGO_SETTINGS_MODULE="console.settings",
        )
        self._log = log_path.open("wb")
        self.process = namespace.popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "console.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the console exited: {self.log()}")
            try:
                if self.api("GET", "/healthz", timeout=1).status_code < 500:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.close()
        raise RuntimeError(f"the console did not start: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def api(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        timeout: float = 15,
        **kwargs: Any,
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return self.namespace.call(
            httpx.request, method, self.url + path, headers=headers, timeout=timeout, **kwargs
        )

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self._log.close()


@dataclass
class HookCall:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Answer = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class _RecorderState:
    calls: list[HookCall] = field(default_factory=list)
    answer: Answer = field(default=lambda body: {})
    lock: threading.Lock = field(default_factory=threading.Lock)


class _RecorderHandler(BaseHTTPRequestHandler):
    state: _RecorderState

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with self.state.lock:
            self.state.calls.append(HookCall(self.path, dict(self.headers), body))
            answer = self.state.answer
        data = json.dumps(answer(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class HookRecorder:
    """Records the hook requests a client sends and answers each with `answer(body)`."""

    def __init__(self, namespace: LoopbackNamespace) -> None:
        self.state = _RecorderState()
        handler = type("Handler", (_RecorderHandler,), {"state": self.state})
        self._server = namespace.call(ThreadingHTTPServer, ("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def answer_with(self, answer: Answer) -> None:
        with self.state.lock:
            self.state.answer = answer
            self.state.calls = []

    @property
    def calls(self) -> list[HookCall]:
        with self.state.lock:
            return list(self.state.calls)

    def events(self) -> list[str]:
        return [str(call.body.get("hook_event_name")) for call in self.calls]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
