"""Per-tool-call overhead of the console middleware with no matching hook, against the
bare SDK middleware with one allow-all interceptor (target: ratio <= 1.10).

Both run a real agent_framework.Agent with a scripted model. Each sample is a pair of runs
(one tool call and CALLS + 1 tool calls); the per-call cost is their difference divided by
CALLS, so session set-up (declaration load, transcript file, startup/shutdown emissions)
is left out and only what every tool call pays is compared. The console side loads its
declaration from a loopback HTTP server (same document shape as GET /api/v1/declaration,
with one PostToolUse hook whose matcher never matches) and ships its records there.

    .venv/bin/python bench/hook_overhead_middleware.py [samples]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_framework import Agent, create_agent_hooks_middleware, tool
from agent_hooks import ALLOW

from console_client import ConsoleHooks
from console_client.interceptors import TOOL_SEAM_HOST_ERROR
from console_client.scripted import ScriptedChatClient, say, tool_call

CALLS = 20

DECLARATION = {
    "declaration": "agent-hooks-declaration/1.0",
    "spec": "agent-hooks/0.1",
    "id": "bench-agent",
    "host": {"name": "console-client"},
    "configuration": {
        "mode": "enforce",
        "composition": {"profile": "sequential/run_all"},
        "identity_provider": "jcs-sha256",
        "approval": {"resolver": "console", "redactor": None},
        "posture": {"tool_seam_host_error": TOOL_SEAM_HOST_ERROR},
        "timeouts": {"interceptor_ms": 35000, "approval_resolver_ms": 630000},
        "records": {"max_buffered": 1000},
    },
    "bindings": [
        {"id": "console-base", "kind": "console.base", "config": {}, "timeout_ms": 5000},
        {
            "id": "hk_bench000001",
            "kind": "console.command",
            "config": {
                "type": "command",
                "matcher": "NeverMatches",
                "command": "exit 2",
                "timeout": 30,
                "failMode": "allow",
            },
            "at": ["post_tool_call"],
            "timeout_ms": 35000,
        },
    ],
    "extensions": {
        "console": {"agent": "bench-agent", "custom_agent": None, "revision": 1, "digest": "x"}
    },
}


class Console(BaseHTTPRequestHandler):
    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("ETag", '"x"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(200, DECLARATION)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(202, {"accepted": 0, "duplicates": 0})

    def log_message(self, format: str, *args: Any) -> None:
        pass


@tool(name="Bash", description="Simulated shell.")
def bash(command: str) -> str:
    return "ok"


def script(calls: int) -> list[Any]:
    return [tool_call("Bash", {"command": f"echo {i}"}, f"c{i}") for i in range(calls)] + [
        say("done")
    ]


class AllowAll:
    def intercept(self, context: dict[str, Any]) -> Any:
        return ALLOW


async def bare_run(calls: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bundle = create_agent_hooks_middleware([AllowAll()])
    agent = Agent(client=ScriptedChatClient(script(calls)), tools=[bash], middleware=[bundle])
    started = time.perf_counter()
    await agent.run("go")
    return time.perf_counter() - started


async def console_run(hooks: ConsoleHooks, calls: int) -> float:
    agent = Agent(
        client=ScriptedChatClient(script(calls)), tools=[bash], middleware=[hooks.middleware()]
    )
    started = time.perf_counter()
    await hooks.run(agent, "go")
    return time.perf_counter() - started


def per_call(long: float, short: float) -> float:
    return (long - short) / CALLS * 1e6  # microseconds


async def main(samples: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Console)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        hooks = ConsoleHooks(
            url,
            "agt_bench",
            cache_dir=root / "cache",
            transcript_dir=root / "t",
            refresh_seconds=1e9,
        )
        bare: list[float] = []
        console: list[float] = []
        for _ in range(5):  # warm-up
            await bare_run(1)
            await console_run(hooks, 1)
        for _ in range(samples):
            bare.append(per_call(await bare_run(CALLS + 1), await bare_run(1)))
            console.append(
                per_call(await console_run(hooks, CALLS + 1), await console_run(hooks, 1))
            )
        await hooks.aclose()
    server.shutdown()

    def p(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1]

    print(f"per tool call, {samples} samples of {CALLS} calls (microseconds)")
    print(f"  bare SDK middleware, 1 allow-all:  p50 {p(bare, 50):8.0f}  p95 {p(bare, 95):8.0f}")
    print(
        f"  console, no matching hook:         p50 {p(console, 50):8.0f}  p95 {p(console, 95):8.0f}"
    )
    print(
        f"  ratio console/bare:                p50 {p(console, 50) / p(bare, 50):8.2f}  p95 {p(console, 95) / p(bare, 95):8.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 40))
