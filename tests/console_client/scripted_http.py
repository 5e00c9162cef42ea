"""A real HTTP server on loopback with scripted answers, for the client's wire tests.

Each request is recorded (method, path, query, JSON body); the answer comes from the
first route whose (method, path prefix) matches: a list of (status, body) pairs consumed
in order (the last one repeats), where body is a dict/list (sent as JSON) or raw bytes.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]


@dataclass
class ScriptedHTTP:
    routes: dict[tuple[str, str], list[tuple[int, Any]]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, method: str, prefix: str, *answers: tuple[int, Any]) -> None:
        self.routes[(method, prefix)] = list(answers)

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        for (route_method, prefix), answers in self.routes.items():
            if route_method == method and path.startswith(prefix):
                return answers.pop(0) if len(answers) > 1 else answers[0]
        return 404, {"error": {"code": "not_found", "message": path, "fields": {}}}

    def start(self) -> ScriptedHTTP:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                owner.seen.append(
                    Seen(self.command, parts.path, parse_qs(parts.query), body, dict(self.headers))
                )
                status, payload = owner.answer(self.command, parts.path)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _handle
            do_POST = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
