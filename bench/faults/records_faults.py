"""Record-stream faults: break one component while `console_client` streams records, then
check that every record the agent produced is stored exactly once.

Each fault is an async function `fault(rig, down_seconds) -> figures`; `record_fault_run`
streams before, during and after it, closes the client (flush + spool replay) and compares.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.faults.procs import http_statuses
from bench.faults.rig import Rig
from bench.faults.stream import Ledger, StoreCheck, agent_stream, sdk_stream, store_check
from console_client import ConsoleHooks

Fault = Callable[[Rig, float], Awaitable[dict[str, Any]]]
CLOSE_TIMEOUT = 120.0
SEAL_WAIT = 75.0


@dataclass
class FaultResult:
    name: str
    check: StoreCheck
    rate: float
    seconds: float
    figures: dict[str, Any] = field(default_factory=dict)
    spool_left: int = 0
    ingest_statuses: dict[str, int] = field(default_factory=dict)

    @property
    def unexpected_statuses(self) -> int:
        """Ingest answers other than 202 and the documented 503 (database unavailable)."""
        return sum(n for code, n in self.ingest_statuses.items() if code not in ("202", "503"))

    @property
    def ok(self) -> bool:
        return (
            self.check.exactly_once
            and self.check.chain_consistent
            and self.spool_left == 0
            and self.unexpected_statuses == 0
        )

    def report(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        figures = " ".join(f"{k}={v}" for k, v in self.figures.items())
        statuses = ",".join(f"{code}x{n}" for code, n in sorted(self.ingest_statuses.items()))
        return (
            f"[{verdict}] {self.name}: {self.check.line()} spool_left={self.spool_left} "
            f"ingest_http={statuses} "
            f"stream={self.rate:.0f} rec/s over {self.seconds:.1f} s {figures}"
        )


async def kill_redis(rig: Rig, down: float) -> dict[str, Any]:
    rig.redis.kill()
    await asyncio.sleep(down)
    started = time.monotonic()
    await asyncio.to_thread(rig.redis.start)
    return {"redis_down_s": down, "redis_restart_s": round(time.monotonic() - started, 2)}


async def kill_celery_worker(rig: Rig, down: float) -> dict[str, Any]:
    assert rig.celery is not None
    children = rig.celery.worker_children()
    if children:
        signal_child = children[0]
        await asyncio.to_thread(_kill_pid, signal_child)
    await asyncio.sleep(2)
    rig.celery.kill_worker()
    await asyncio.sleep(down)
    rig.celery.start_worker()
    return {"pool_child_killed": bool(children), "worker_down_s": down}


def _kill_pid(pid: int) -> None:
    import os

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def restart_postgres(rig: Rig, down: float) -> dict[str, Any]:
    assert rig.cluster is not None, "the PostgreSQL fault needs the private cluster"
    took = [await asyncio.to_thread(rig.cluster.restart_immediate)]
    if down > 0:
        await asyncio.sleep(down)
        took.append(await asyncio.to_thread(rig.cluster.restart_immediate))
    return {"pg_immediate_restarts": len(took), "pg_restart_s": round(max(took), 2)}


async def stop_console(rig: Rig, down: float) -> dict[str, Any]:
    rig.console.stop(signal.SIGKILL)
    await asyncio.sleep(down)
    took = await asyncio.to_thread(rig.console.start)
    return {"console_down_s": down, "console_start_s": round(took, 2)}


FAULTS: dict[str, Fault] = {
    "redis": kill_redis,
    "celery": kill_celery_worker,
    "postgres": restart_postgres,
    "console": stop_console,
}


def _spool_lines(hooks: ConsoleHooks) -> int:
    spool_dir = hooks.records.spool_dir
    if not spool_dir.exists():
        return 0
    return sum(
        len(path.read_text(encoding="utf-8").splitlines())
        for path in spool_dir.iterdir()
        if path.is_file()
    )


async def record_fault_run(
    rig: Rig,
    name: str,
    fault: Fault | None,
    *,
    rate: float = 300,
    before: float = 5,
    down: float = 10,
    after: float = 10,
    source: str = "sdk",
    wait_seals: bool = False,
) -> FaultResult:
    """Stream, break, stream on; close the client; compare the ledger with the database."""
    log_offset = rig.console.log_size()
    hooks = ConsoleHooks(rig.console.url, rig.agent_token, **rig.client_dirs())
    ledger = Ledger()
    ledger.attach(hooks)
    total = before + down + after
    if source == "agent":
        stream = asyncio.create_task(agent_stream(hooks, loops=4, seconds=total))
    else:
        stream = asyncio.create_task(sdk_stream(hooks, rate=rate, seconds=total))
    figures: dict[str, Any] = {}
    try:
        await asyncio.sleep(before)
        if fault is not None:
            figures = await fault(rig, down)
        stats = await stream
    finally:
        if not stream.done():
            stream.cancel()
        started = time.monotonic()
        await asyncio.wait_for(hooks.aclose(), timeout=CLOSE_TIMEOUT)
        figures["close_s"] = round(time.monotonic() - started, 2)
    figures["delivered"] = hooks.records.delivered
    figures["spooled"] = hooks.records.spooled
    check = await asyncio.to_thread(store_check, rig.database_url, rig.provisioned.agent, ledger)
    if wait_seals:
        deadline = time.monotonic() + SEAL_WAIT
        while (check.seal_pending or check.sealed < check.stored_rows) and (
            time.monotonic() < deadline
        ):
            await asyncio.sleep(2)
            check = await asyncio.to_thread(
                store_check, rig.database_url, rig.provisioned.agent, ledger
            )
        figures["all_sealed"] = check.seal_pending == 0 and check.sealed == check.stored_rows
    seconds = stats.seconds
    return FaultResult(
        name=name,
        check=check,
        rate=ledger.submitted / seconds if seconds else 0.0,
        seconds=seconds,
        figures=figures,
        spool_left=_spool_lines(hooks),
        ingest_statuses=http_statuses(rig.console.log, log_offset, "/api/v1/records"),
    )
