"""Approval latency: escalation POST → row frame at a reviewer's socket, and decision POST →
the agent's long-poll return, on real daphne servers with PostgreSQL and channels-redis.

    .venv/bin/python bench/approval_latency.py [--escalations 200] [--processes 2]

Baseline measured in the same run, on the same machine: a raw Redis PUBLISH → SUBSCRIBE
round trip plus one plain HTTP round trip (GET /healthz) to the same server; each baseline
sample is the sum of one of each. Targets (issue 14): p95 ≤ 100 ms on each path, escalation
→ row frame ≤ 4× and decision → long-poll ≤ 5× the baseline p95. Works in its own database
(BENCH_DATABASE_URL, default `console_approvals_bench`) and Redis (BENCH_REDIS_URL, default
DB 5, channel prefix `bench`); the servers run with production settings (DEBUG=0).

`--reviewers N` keeps N reviewer inbox sockets open on the first process (default 1): each
escalation's frame is timed at the first and at the last of them, which shows what every
further reviewer online costs (each socket re-checks its access and renders its own frames).

`--open N` first leaves N escalations open in the queue (created through the endpoint,
in-process; topped up on later runs): every push then counts and renders the reviewer's
nav counter against a long queue.

`--processes 2` starts two daphne processes on two ports (same database, same Redis). The
reviewer's socket and the decision stay on the first; escalations alternate: even ones are
created (and long-polled) on the first process, odd ones on the second, so each push of an
odd one crosses processes through Redis. Both halves are reported, under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_approvals_bench"
)
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/5")
SERVER_ENV = {
    "DATABASE_URL": DATABASE_URL,
    "REDIS_URL": REDIS_URL,
    "CHANNELS_PREFIX": "bench",
    "DEBUG": "0",
    "SECRET_KEY": "bench-only-secret-key-approvals-0123456789abcdefghijklmnop",
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    "SECURE_SSL_REDIRECT": "0",
    "CONSOLE_AGENT_RATE_LIMIT": "10000000/min",
    "LOG_LEVEL": "WARNING",
}


def setup_django() -> None:
    import psycopg

    name = urlparse(DATABASE_URL).path.lstrip("/")
    with psycopg.connect(DATABASE_URL.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    os.environ.update(SERVER_ENV)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def fixtures() -> tuple[str, str, str]:
    """(agent token, reviewer token, reviewer session cookie) in the bench database."""
    from django.test import Client

    from agents import services as agents
    from agents.models import Agent
    from console import services as console

    agent = Agent.objects.filter(slug="bench-approvals").first() or agents.agent_create(
        actor=None, slug="bench-approvals"
    )
    if not agent.hooks.filter(event="PreToolUse").exists():
        # The console accepts an escalation only for a call an approval hook matches.
        agents.hook_create(
            actor=None,
            agent=agent,
            custom_agent=None,
            event="PreToolUse",
            raw={"type": "approval", "matcher": "restart_service"},
        )
    agent_token = agents.agent_token_issue(actor=None, agent=agent, name="bench").plaintext
    reviewer = console.user_set_role(actor=None, username="bench-reviewer", role="reviewer")
    reviewer_token = console.api_token_issue(actor=None, user=reviewer, name="bench").plaintext
    client = Client()
    client.force_login(reviewer)
    return agent_token, reviewer_token, client.cookies["sessionid"].value


def open_queue(agent_token: str, wanted: int) -> int:
    """Top the bench agent's open escalations up to `wanted`, through the real endpoint
    (in-process): a reviewer with a long queue, which every push counts and renders against.
    Returns how many are open."""
    from django.test import Client
    from django.utils import timezone

    from approvals.models import Escalation, EscalationStatus

    still_open = Escalation.objects.filter(
        agent__slug="bench-approvals",
        status=EscalationStatus.PENDING,
        expires_at__gt=timezone.now(),
    ).count()
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    for n in range(wanted - still_open):
        response = client.post(
            "/api/v1/escalations", {"request": approval_request(n)}, content_type="application/json"
        )
        if response.status_code != 201:
            raise SystemExit(f"open escalation: HTTP {response.status_code} {response.content!r}")
    return max(wanted, still_open)


def approval_request(n: int) -> dict[str, Any]:
    from agent_hooks import AgentContextBuilder, Verdict
    from agent_hooks.canonical import context_identity

    builder = AgentContextBuilder(
        agent_id="bench", framework="agent_framework", session_id=f"bench-{time.time_ns()}-{n}"
    )
    context = dict(builder.pre_tool_call(call_id=f"c{n}", name="restart_service", args={"n": n}))
    return {
        "context_identity": context_identity(context),
        "interception_point": "pre_tool_call",
        "verdict": Verdict.escalate(reason="approval_required").to_wire(),
        "context": context,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_daphne(port: int) -> subprocess.Popen[bytes]:
    import httpx

    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "console.asgi:application"],
        cwd=ROOT,
        env={**os.environ, **SERVER_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("daphne did not come up")


class Socket:
    """A minimal RFC 6455 client: enough to read the server's text frames with arrival times."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.frames: asyncio.Queue[tuple[float, str]] = asyncio.Queue()
        self.task = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, port: int, path: str, cookie: str) -> Socket:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                f"Origin: http://127.0.0.1:{port}\r\nCookie: sessionid={cookie}\r\n\r\n"
            ).encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise SystemExit(f"websocket refused: {head[:80]!r}")
        return cls(reader, writer)

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.writer.write(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)

    async def _read(self) -> None:
        message = b""
        while True:
            first, second = await self.reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", await self.reader.readexactly(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", await self.reader.readexactly(8))[0]
            payload = await self.reader.readexactly(length)
            opcode = first & 0x0F
            if opcode == 9:
                self._send(10, payload)
                continue
            if opcode == 8:
                return
            message += payload
            if first & 0x80:
                self.frames.put_nowait((time.perf_counter(), message.decode()))
                message = b""

    async def frame_containing(self, needle: str) -> float:
        async with asyncio.timeout(10):
            while True:
                at, text = await self.frames.get()
                if needle in text:
                    return at

    def drain(self) -> None:
        while not self.frames.empty():
            self.frames.get_nowait()

    async def close(self) -> None:
        self.task.cancel()
        self.writer.close()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the server processes so far (Linux /proc; 0 elsewhere).
    Per escalation it shows the servers' own work, which a busy machine does not inflate the
    way it inflates wall-clock latency."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def baseline(port: int, samples: int) -> tuple[list[float], list[float]]:
    import httpx
    import redis.asyncio as aioredis

    pubsub_ms, http_ms = [], []
    client = aioredis.from_url(REDIS_URL)
    pubsub = client.pubsub()
    await pubsub.subscribe("bench:approvals:baseline")
    await pubsub.get_message(timeout=1)  # the subscribe confirmation
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        await http.get("/healthz")
        for n in range(samples):
            start = time.perf_counter()
            await client.publish("bench:approvals:baseline", str(n))
            while (await pubsub.get_message(timeout=5)) is None:
                pass
            pubsub_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            (await http.get("/healthz")).raise_for_status()
            http_ms.append((time.perf_counter() - start) * 1000)
    await pubsub.aclose()
    await client.aclose()
    return pubsub_ms, http_ms


async def measure(
    ports: list[int], count: int, tokens: tuple[str, str, str], reviewers: int = 1
) -> dict[str, list[float]]:
    """Per escalation n: created and long-polled on ports[n % len(ports)]; the reviewer's
    socket and decision on ports[0]. Keys: created, decided, … (all), and the same with
    `@<route>` for each route (0: one process; 1: across two)."""
    import httpx

    agent_token, reviewer_token, cookie = tokens
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    sockets = [
        await Socket.connect(ports[0], "/ws/approvals/?view=inbox", cookie)
        for _ in range(reviewers)
    ]
    for socket_ in sockets:
        await socket_.frame_containing('id="pending-rows"')  # the re-sync on connect
    agent_headers = {"Authorization": f"Bearer {agent_token}"}
    agents = [httpx.AsyncClient(base_url=base, headers=agent_headers) for base in bases]
    pollers = [httpx.AsyncClient(base_url=base, headers=agent_headers) for base in bases]
    reviewer = httpx.AsyncClient(
        base_url=bases[0], headers={"Authorization": f"Bearer {reviewer_token}"}
    )
    results: dict[str, list[float]] = {}

    def note(key: str, route: int, value: float) -> None:
        results.setdefault(key, []).append(value)
        results.setdefault(f"{key}@{route}", []).append(value)

    try:
        for n in range(count):
            route = n % len(ports)
            agent, poller = agents[route], pollers[route]
            for socket_ in sockets:
                socket_.drain()
            start = time.perf_counter()
            response = await agent.post(
                "/api/v1/escalations", json={"request": approval_request(n)}
            )
            response.raise_for_status()
            note("create_post", route, (time.perf_counter() - start) * 1000)
            escalation = response.json()["id"]
            arrivals = await asyncio.gather(
                *(socket_.frame_containing(f'id="esc-{escalation}"') for socket_ in sockets)
            )
            note("created", route, (arrivals[0] - start) * 1000)
            note("created_last", route, (max(arrivals) - start) * 1000)

            waiting = asyncio.create_task(
                poller.get(f"/api/v1/escalations/{escalation}", params={"wait": 30}, timeout=40)
            )
            await asyncio.sleep(0.05)  # let the poll subscribe before the decision
            start = time.perf_counter()
            decided = await reviewer.post(
                f"/api/v1/escalations/{escalation}/decision", json={"outcome": "approve"}
            )
            decided.raise_for_status()
            note("decide_post", route, (time.perf_counter() - start) * 1000)
            answer = await waiting
            note("decided", route, (time.perf_counter() - start) * 1000)
            if answer.json()["status"] != "approved":
                raise SystemExit(f"long-poll answered {answer.text}")
    finally:
        for socket_ in sockets:
            await socket_.close()
        for client in (*agents, *pollers, reviewer):
            await client.aclose()
    return results


TARGETS = (("created", "escalation → row frame", 4), ("decided", "decision → long-poll", 5))


def report(
    results: dict[str, list[float]],
    pubsub: list[float],
    http: list[float],
    processes: int,
    reviewers: int = 1,
) -> None:
    base = [a + b for a, b in zip(pubsub, http, strict=True)]
    rows = [
        ("baseline: Redis PUBLISH→SUBSCRIBE", pubsub),
        ("baseline: HTTP GET /healthz", http),
        ("baseline: sum (per sample)", base),
        ("escalation POST → row frame at reviewer", results["created"]),
        *(
            [(f"  (… at the last of {reviewers} reviewers)", results["created_last"])]
            if reviewers > 1
            else []
        ),
        ("decision POST → long-poll return", results["decided"]),
        ("  (escalation POST response alone)", results["create_post"]),
        ("  (decision POST response alone)", results["decide_post"]),
    ]
    if processes > 1:
        for route, where in ((0, "one process"), (1, "across two")):
            rows += [
                (f"escalation → row frame, {where}", results[f"created@{route}"]),
                (f"decision → long-poll, {where}", results[f"decided@{route}"]),
            ]
    print(f"\n{'path':<42} {'n':>4} {'p50 ms':>8} {'p95 ms':>8}")
    for name, values in rows:
        print(f"{name:<42} {len(values):>4} {pct(values, 50):>8.2f} {pct(values, 95):>8.2f}")
    base95 = pct(base, 95)
    print()
    keys = [("", "")] + ([("@0", ", one process"), ("@1", ", across two")] if processes > 1 else [])
    for suffix, where in keys:
        for key, name, times in TARGETS:
            p95 = pct(results[key + suffix], 95)
            verdict = "met" if p95 <= 100 and p95 <= times * base95 else "MISSED"
            print(
                f"{name + where:<38} p95 {p95:7.2f} ms = {p95 / base95:4.1f}× baseline p95 "
                f"({base95:.2f} ms); target ≤ 100 ms and ≤ {times}×: {verdict}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--escalations", type=int, default=200)
    parser.add_argument("--processes", type=int, default=1, choices=(1, 2))
    parser.add_argument("--reviewers", type=int, default=1, help="reviewer sockets open")
    parser.add_argument(
        "--open", type=int, default=0, help="escalations left open in the queue before the run"
    )
    args = parser.parse_args()
    setup_django()
    tokens = fixtures()
    still_open = open_queue(tokens[0], args.open) if args.open else 0
    ports = [free_port() for _ in range(args.processes)]
    servers = [start_daphne(port) for port in ports]
    pids = [server.pid for server in servers]
    try:
        pubsub, http = asyncio.run(baseline(ports[0], args.escalations))
        cpu_before = cpu_seconds(pids)
        results = asyncio.run(measure(ports, args.escalations, tokens, args.reviewers))
        cpu = (cpu_seconds(pids) - cpu_before) * 1000 / args.escalations
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:  # a busy machine: do not lose the figures
                server.kill()
                server.wait(timeout=10)
    load = os.getloadavg()
    print(
        f"{args.processes} daphne process(es), {args.reviewers} reviewer socket(s), "
        f"{still_open} other escalations open; load average {load[0]:.2f} {load[1]:.2f}"
    )
    print(f"server CPU per escalation (create, frame, long-poll, decision): {cpu:.1f} ms")
    report(results, pubsub, http, args.processes, args.reviewers)


if __name__ == "__main__":
    main()
