"""Shared set-up for the audit benchmarks (bench/ingest.py, export.py, search.py).

Each benchmark works in its own PostgreSQL database (default `console_audit_bench`,
override with BENCH_DATABASE_URL), never the test database, and Redis DB 6. Servers are
real `daphne` processes on loopback with production settings (DEBUG=0).
"""

from __future__ import annotations

import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
BENCH_DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_audit_bench"
)
BENCH_REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")


def setup_django() -> None:
    """Point Django at the bench database (created and migrated if needed)."""
    import psycopg

    url = urlparse(BENCH_DATABASE_URL)
    name = url.path.lstrip("/")
    admin = BENCH_DATABASE_URL.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = BENCH_DATABASE_URL
    os.environ["REDIS_URL"] = BENCH_REDIS_URL
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    # The bench's own process logs warnings only (the servers keep their level): at INFO,
    # every httpx request and axes login of the in-process clients lands in the figures.
    if "LOG_LEVEL" not in os.environ:
        logging.getLogger().setLevel(logging.WARNING)
    call_command("migrate", verbosity=0)


def server_env() -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": BENCH_DATABASE_URL,
        "REDIS_URL": BENCH_REDIS_URL,
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        # The per-token rate limit would cap the benchmark, not measure ingest.
        "CONSOLE_AGENT_RATE_LIMIT": "10000000/min",
        "MAX_BODY_BYTES": str(8 * 1024 * 1024),
        "LOG_LEVEL": "WARNING",
    }


def free_ports(count: int) -> list[int]:
    """Loopback ports nothing listens on (a fixed port could answer from another bench's
    server, with another database)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def start_daphne(
    ports: list[int], app: str = "console.asgi:application"
) -> list[subprocess.Popen[bytes]]:
    daphne = str(Path(sys.executable).parent / "daphne")
    procs = [
        subprocess.Popen(
            [daphne, "-b", "127.0.0.1", "-p", str(port), app],
            cwd=ROOT,
            env=server_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports
    ]
    import httpx

    deadline = time.monotonic() + 60
    for port in ports:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                stop(procs)
                raise SystemExit("daphne did not come up")
            time.sleep(0.3)
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def bench_agent(slug: str) -> tuple[Any, str]:
    """(agent, plaintext agent token) in the bench database."""
    from agents import services
    from agents.models import Agent

    agent = Agent.objects.filter(slug=slug).first() or services.agent_create(actor=None, slug=slug)
    return agent, services.agent_token_issue(actor=None, agent=agent, name="bench").plaintext


def bench_auditor() -> str:
    """A personal API token of an auditor in the bench database."""
    from console import services

    user = services.user_set_role(actor=None, username="bench-auditor", role="auditor")
    return services.api_token_issue(actor=None, user=user, name="bench").plaintext


def psycopg_conninfo() -> str:
    return BENCH_DATABASE_URL


def median_p95(samples_ms: list[float]) -> tuple[float, float]:
    """(p50, p95) of a list of timings."""
    samples = sorted(samples_ms)
    return statistics.median(samples), samples[max(0, round(0.95 * len(samples)) - 1)]


def timed(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(p50, p95) in ms of `repeat` calls, after one untimed call (caches, connection)."""
    call()
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        samples.append((time.perf_counter() - began) * 1000)
    return median_p95(samples)
