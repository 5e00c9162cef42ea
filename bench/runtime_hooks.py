"""Runtime hooks (POST /api/v1/hooks/{runtime}) on a real daphne server with PostgreSQL and channels-redis:

(a) adapter overhead: `POST /api/v1/hooks/claude-code` for a PreToolUse no hook matches (the
    agent has hooks, at other events and for other tools) vs a bare HTTP round trip
    (`GET /healthz`) to the same server, interleaved. Targets: the time the call adds at
    p95 (call p95 − round-trip p95) ≤ 5 ms, and the call p95 ≤ 1.5× the round trip p95.
(b) a sandboxed command hook run server-side: the console's runner (the sandbox, under the
    concurrency bound) on the seed's dangerous-command script, awaited in one long-lived
    loop, vs a plain `subprocess.run` of the script, interleaved; target ≤ 1.5×. Also the
    whole hook call with that script as a matching PreToolUse hook vs the bare round trip
    plus the plain run.
(c) 200 concurrent Claude Code PreToolUse calls held open by an approval hook on one server
    process: every one gets its escalation, the database sessions of the server are sampled
    while they wait, then all are approved and every call must answer `allow`.

    .venv/bin/python bench/runtime_hooks.py [--calls 300] [--runs 100] [--pending 200] [--parts abc]

Works in its own database (BENCH_DATABASE_URL, default `console_runtime_bench`) and Redis
(BENCH_REDIS_URL, default DB 5, channel prefix `bench`); DEBUG=0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import approval_latency as common  # noqa: E402

common.DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_runtime_bench"
)
common.SERVER_ENV["DATABASE_URL"] = common.DATABASE_URL
# The sandbox's PATH, so both runs start the same python3 (see hook_overhead_sandbox.py).
PLAIN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
PRE = {
    "cwd": "/home/dev/project",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls -la /var/log", "description": "List logs"},
}


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def agent_with(slug: str, hooks: dict[str, list[dict[str, Any]]]) -> str:
    from agents import services
    from agents.models import Agent

    agent = Agent.objects.filter(slug=slug).first() or services.agent_create(actor=None, slug=slug)
    services.agent_hooks_replace(actor=None, agent=agent, document={"hooks": hooks})
    return services.agent_token_issue(actor=None, agent=agent, name="bench").plaintext


def seed_script() -> dict[str, Any]:
    import yaml

    from demo.documents import SEED_CUSTOM_AGENT_YAML

    hook = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)["spec"]["hooks"]["PostToolUse"][0]
    return {**hook, "matcher": "Bash"}


def body(session: str) -> dict[str, Any]:
    return {**PRE, "session_id": session, "tool_use_id": f"toolu_{uuid.uuid4().hex[:20]}"}


async def overhead(port: int, token: str, calls: int) -> tuple[list[float], list[float]]:
    import httpx

    hook_ms, bare_ms = [], []
    session = f"bench-{uuid.uuid4().hex}"
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        for _ in range(20):  # warm-up
            await http.get("/healthz")
            await http.post("/api/v1/hooks/claude-code", json=body(session), headers=headers)
        for _ in range(calls):
            start = time.perf_counter()
            (await http.get("/healthz")).raise_for_status()
            bare_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            answer = await http.post(
                "/api/v1/hooks/claude-code", json=body(session), headers=headers
            )
            hook_ms.append((time.perf_counter() - start) * 1000)
            answer.raise_for_status()
    return hook_ms, bare_ms


async def runner_vs_plain(script: str, runs: int) -> tuple[list[float], list[float]]:
    """The console-side runner and a plain subprocess.run of the same script, interleaved."""
    from runtimes.execution import run_command_bounded

    hook = {"type": "command", "script": script, "timeout": 30}
    context = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": PRE["tool_input"],
    }
    sandboxed, plain = [], []
    for _ in range(5):
        await run_command_bounded(hook, context)
    for i in range(runs):
        if i % 2:  # alternating which goes first
            plain += plain_script_ms(script, 1)
        start = time.perf_counter()
        result = await run_command_bounded(hook, context)
        sandboxed.append((time.perf_counter() - start) * 1000)
        assert result.error is None, result.error
        if not i % 2:
            plain += plain_script_ms(script, 1)
    return sandboxed, plain


def plain_script_ms(script: str, runs: int) -> list[float]:
    context = json.dumps({"tool_name": "Bash", "tool_input": PRE["tool_input"]}).encode()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(script)
    os.chmod(handle.name, 0o755)
    out = []
    try:
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(
                [handle.name], input=context, capture_output=True, check=False, env=PLAIN_ENV
            )
            out.append((time.perf_counter() - start) * 1000)
    finally:
        os.unlink(handle.name)
    return out


async def pending(port: int, token: str, count: int) -> dict[str, Any]:
    import httpx
    import psycopg
    from asgiref.sync import sync_to_async

    from approvals import services
    from approvals.models import Escalation
    from console import services as console

    reviewer = await sync_to_async(console.user_set_role)(
        actor=None, username="bench-runtime-reviewer", role="reviewer"
    )
    limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=count + 10)
    headers = {"Authorization": f"Bearer {token}"}
    name = common.DATABASE_URL.rsplit("/", 1)[1]
    sessions: list[int] = []
    busy: list[int] = []
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", timeout=600, limits=limits
    ) as http:
        run = uuid.uuid4().hex[:12]
        mine = Escalation.objects.filter(session_id__startswith=f"bench-p-{run}-")
        started = time.perf_counter()
        calls = [
            asyncio.create_task(
                http.post(
                    "/api/v1/hooks/claude-code", json=body(f"bench-p-{run}-{n}"), headers=headers
                )
            )
            for n in range(count)
        ]
        while (opened := await sync_to_async(mine.count)()) < count:
            done = [call for call in calls if call.done()]
            if done or time.perf_counter() - started > 300:
                statuses = [str(call.exception() or call.result().status_code) for call in done]
                raise SystemExit(
                    f"{opened} of {count} escalations opened; calls that returned without "
                    f"one: {sorted(set(statuses))} ×{len(done)}"
                )
            await asyncio.sleep(0.2)
        opened_s = time.perf_counter() - started
        with psycopg.connect(common.DATABASE_URL.rsplit("/", 1)[0] + "/postgres") as conn:
            for _ in range(10):
                row = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') "
                    "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    [name],
                ).fetchone()
                sessions.append(int(row[0]) if row else 0)
                busy.append(int(row[1]) if row else 0)
                await asyncio.sleep(0.3)
        assert not any(call.done() for call in calls), "a call returned before the decision"
        ids = await sync_to_async(
            lambda: list(mine.filter(status="pending").values_list("pk", flat=True))
        )()
        decided = time.perf_counter()
        for pk in ids:
            escalation = await sync_to_async(Escalation.objects.get)(pk=pk)
            await sync_to_async(services.escalation_decide)(
                escalation=escalation, actor=reviewer, outcome="approve"
            )
        answers = await asyncio.gather(*calls)
        all_back_s = time.perf_counter() - decided
    allowed = sum(
        1
        for answer in answers
        if answer.status_code == 200
        and answer.json().get("hookSpecificOutput", {}).get("permissionDecision") == "allow"
    )
    return {
        "count": count,
        "opened_s": opened_s,
        "db_sessions_max": max(sessions),
        "db_busy_max": max(busy),
        "allowed": allowed,
        "decide_and_return_s": all_back_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--pending", type=int, default=200)
    parser.add_argument("--runs", type=int, default=100, help="sandboxed runs in (b)")
    parser.add_argument("--parts", default="abc", help="which of (a), (b), (c) to run")
    args = parser.parse_args()
    common.setup_django()
    quiet = agent_with(
        "bench-runtime-quiet",
        {
            "PreToolUse": [{"type": "command", "matcher": "Write|Edit", "command": "exit 0"}],
            "Stop": [{"type": "command", "command": "exit 0"}],
        },
    )
    script = seed_script()
    sandboxed = agent_with("bench-runtime-sandbox", {"PreToolUse": [script]})
    approving = agent_with(
        "bench-runtime-approval", {"PreToolUse": [{"type": "approval", "matcher": "Bash"}]}
    )
    port = common.free_port()
    server = common.start_daphne(port)
    try:
        # Each part prints as soon as it is measured, with the load average before and after.
        if "a" in args.parts:
            part_a(port, quiet, args.calls)
        if "b" in args.parts:
            part_b(port, sandboxed, script["script"], args)
        if "c" in args.parts:
            part_c(port, approving, args.pending)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def part_a(port: int, quiet: str, calls: int) -> None:
    before = load()
    hook_ms, bare_ms = asyncio.run(overhead(port, quiet, calls))
    share = [h - b for h, b in zip(hook_ms, bare_ms, strict=True)]
    print(f"\n(a) adapter overhead, no matching hook (load {before} -> {load()})")
    table(
        ("bare HTTP round trip (GET /healthz)", bare_ms),
        ("claude-code PreToolUse, no matching hook", hook_ms),
        ("  the console's share (difference per pair)", share),
    )
    ratio = pct(hook_ms, 95) / pct(bare_ms, 95)
    added = pct(hook_ms, 95) - pct(bare_ms, 95)
    print(
        f"(a) added at p95: {added:.2f} ms (call p95 − round-trip p95; target ≤ 5 ms: "
        f"{verdict(added <= 5)}); call p95 = {ratio:.2f}× the bare round trip "
        f"(target ≤ 1.5×: {verdict(ratio <= 1.5)}). The per-pair difference's p95 "
        f"({pct(share, 95):.2f} ms) also holds both samples' noise."
    )


def part_b(port: int, sandboxed: str, script: str, args: argparse.Namespace) -> None:
    before = load()
    runner_ms, runner_plain_ms = asyncio.run(runner_vs_plain(script, args.runs))
    sandbox_ms, bare2_ms = asyncio.run(overhead(port, sandboxed, max(50, args.calls // 3)))
    plain_ms = plain_script_ms(script, len(bare2_ms))
    baseline2 = [b + p for b, p in zip(bare2_ms, plain_ms, strict=True)]
    print(f"\n(b) sandboxed command hook run server-side (load {before} -> {load()})")
    table(
        ("console runner: sandboxed seed script", runner_ms),
        ("plain subprocess.run of the script", runner_plain_ms),
        ("claude-code PreToolUse, sandboxed seed script", sandbox_ms),
        ("bare round trip + plain subprocess.run of the script", baseline2),
    )
    p50 = pct(runner_ms, 50) / pct(runner_plain_ms, 50)
    p95 = pct(runner_ms, 95) / pct(runner_plain_ms, 95)
    whole = pct(sandbox_ms, 95) / pct(baseline2, 95)
    print(
        f"(b) sandboxed run p50 {p50:.2f}×, p95 {p95:.2f}× plain (target ≤ 1.5×: "
        f"{verdict(max(p50, p95) <= 1.5)}); the whole call p95 = {whole:.2f}× round trip "
        "+ plain run"
    )


def part_c(port: int, approving: str, count: int) -> None:
    before = load()
    held = asyncio.run(pending(port, approving, count))
    print(
        f"\n(c) {held['count']} pending approvals opened in {held['opened_s']:.1f} s; "
        f"database sessions while they waited: at most {held['db_sessions_max']} open "
        f"(the server's pool and this script), {held['db_busy_max']} not idle; "
        f"{held['allowed']}/{held['count']} answered allow "
        f"{held['decide_and_return_s']:.1f} s after the decisions began "
        f"(load {before} -> {load()})"
    )


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def table(*rows: tuple[str, list[float]]) -> None:
    print(f"{'path':<56} {'n':>4} {'p50 ms':>8} {'p95 ms':>8}")
    for name, values in rows:
        print(f"{name:<56} {len(values):>4} {pct(values, 50):>8.2f} {pct(values, 95):>8.2f}")


if __name__ == "__main__":
    main()
