"""A scripted model endpoint on loopback, speaking the streaming wire formats of the real APIs.

- Anthropic Messages (`POST /v1/messages`, server-sent events: `message_start`,
  `content_block_start` / `content_block_delta` / `content_block_stop`, `message_delta`,
  `message_stop`), for Claude Code;
- OpenAI Responses (`POST /v1/responses`, server-sent events: `response.created`,
  `response.output_item.added` / `.done`, `response.output_text.delta`, `response.completed`),
  for Codex CLI.

A test scripts the turns the "model" takes (a tool call, then a text answer, ...). Each request
that offers tools takes the next scripted turn; a request without tools (a client's side
request, e.g. a title) gets a short text answer and consumes nothing. Every request body is
recorded, so a test can assert what the model was shown: the tool result with a hook's deny
reason, a hook's additional context, a Stop hook's continuation.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.reach_clients.netns import LoopbackNamespace


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool: Claude Code's `Bash` (`{"command": ...}`) or Codex's
    `exec_command` (`{"cmd": ...}`); `arguments` is the tool input as the runtime names it."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Text:
    text: str


Turn = ToolCall | Text


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]

    def dumps(self) -> str:
        return json.dumps(self.body)


@dataclass
class _State:
    turns: list[Turn] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunks(text: str, size: int = 12) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def anthropic_events(turn: Turn, model: str) -> Iterator[bytes]:
    """The server-sent events of one streamed Messages API answer, as the real API sends them."""
    message_id = f"msg_{uuid.uuid4().hex[:24]}"
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 25,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 1,
                },
            },
        },
    )
    if isinstance(turn, ToolCall):
        block = {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:24]}",
            "name": turn.name,
            "input": {},
        }
        yield _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
        yield _sse("ping", {"type": "ping"})
        for piece in _chunks(json.dumps(turn.arguments)):
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        stop_reason = "tool_use"
    else:
        yield _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        yield _sse("ping", {"type": "ping"})
        for piece in _chunks(turn.text):
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )
        stop_reason = "end_turn"
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 15},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def responses_events(turn: Turn, model: str) -> Iterator[bytes]:
    """The server-sent events of one streamed Responses API answer, as the real API sends them."""
    response_id = f"resp_{uuid.uuid4().hex[:24]}"
    response = {
        "id": response_id,
        "object": "response",
        "model": model,
        "status": "in_progress",
        "output": [],
    }
    yield _sse("response.created", {"type": "response.created", "response": response})
    yield _sse("response.in_progress", {"type": "response.in_progress", "response": response})
    if isinstance(turn, ToolCall):
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:24]}",
            "call_id": f"call_{uuid.uuid4().hex[:24]}",
            "name": turn.name,
            "arguments": "",
            "status": "in_progress",
        }
        yield _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
        arguments = json.dumps(turn.arguments)
        for piece in _chunks(arguments):
            yield _sse(
                "response.function_call_arguments.delta",
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "delta": piece,
                },
            )
        yield _sse(
            "response.function_call_arguments.done",
            {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": 0,
                "arguments": arguments,
            },
        )
        item = {**item, "arguments": arguments, "status": "completed"}
    else:
        item = {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        yield _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        yield _sse(
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "part": part,
            },
        )
        for piece in _chunks(turn.text):
            yield _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                },
            )
        part = {**part, "text": turn.text}
        yield _sse(
            "response.output_text.done",
            {
                "type": "response.output_text.done",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "text": turn.text,
            },
        )
        yield _sse(
            "response.content_part.done",
            {
                "type": "response.content_part.done",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "part": part,
            },
        )
        item = {**item, "status": "completed", "content": [part]}
    yield _sse(
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    usage = {
        "input_tokens": 25,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 15,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 40,
    }
    completed = {**response, "status": "completed", "output": [item], "usage": usage}
    yield _sse("response.completed", {"type": "response.completed", "response": completed})


def gemini_chunks(turn: Turn, model: str) -> Iterator[dict[str, Any]]:
    """The chunks of one streamed `streamGenerateContent` answer (Gemini API)."""
    usage = {"promptTokenCount": 25, "candidatesTokenCount": 15, "totalTokenCount": 40}
    if isinstance(turn, ToolCall):
        parts: list[dict[str, Any]] = [
            {"functionCall": {"name": turn.name, "args": turn.arguments}}
        ]
        yield {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": usage,
            "modelVersion": model,
        }
        return
    pieces = list(_chunks(turn.text))
    for number, piece in enumerate(pieces):
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": piece}]},
            "index": 0,
        }
        if number == len(pieces) - 1:
            candidate["finishReason"] = "STOP"
        yield {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        return body if isinstance(body, dict) else {"_body": body}

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        with self.state.lock:
            self.state.requests.append(Recorded(self.path, body))
            if body.get("tools") and self.state.turns:
                return self.state.turns.pop(0)
        return Text("ok")

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self._json(200, {"data": [], "object": "list"})

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        body = self._body()
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": 25})
            return
        if path.endswith("/messages"):
            turn = self._next_turn(body)
            self._stream(anthropic_events(turn, str(body.get("model") or "claude")))
            return
        if path.endswith(":streamGenerateContent"):
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
            turn = self._next_turn(body)
            self._stream(
                f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                for chunk in gemini_chunks(turn, model)
            )
            return
        if path.endswith(":generateContent"):
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
            turn = self._next_turn(body)
            self._json(200, next(iter(gemini_chunks(turn, model))))
            return
        if path.endswith(":countTokens"):
            self._json(200, {"totalTokens": 25})
            return
        if path.endswith("/responses"):
            turn = self._next_turn(body)
            self._stream(responses_events(turn, str(body.get("model") or "gpt")))
            return
        with self.state.lock:
            self.state.requests.append(Recorded(self.path, body))
        self._json(404, {"error": {"type": "not_found_error", "message": f"no {path} here"}})

    def _stream(self, events: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(event)
            self.wfile.flush()
        self.close_connection = True


class ScriptedModel:
    """The scripted endpoint, listening on a free loopback port inside `namespace`."""

    def __init__(self, namespace: LoopbackNamespace) -> None:
        self.state = _State()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = namespace.call(ThreadingHTTPServer, ("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def script(self, *turns: Turn) -> None:
        """Replace the turns still to come and forget the requests seen so far."""
        with self.state.lock:
            self.state.turns = list(turns)
            self.state.requests = []

    @property
    def requests(self) -> list[Recorded]:
        with self.state.lock:
            return list(self.state.requests)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
