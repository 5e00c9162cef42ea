"""An agent process SIGKILLed while it replays its record spool loses nothing: the next
agent process adopts the replay it left behind (the console de-duplicates what was sent
twice), so every record is stored exactly once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import psycopg
import pytest

from bench.faults.procs import ROOT
from bench.faults.stream import Ledger, sdk_session, store_check
from console_client import ConsoleHooks

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
SESSIONS = 500  # 10 records each: ~10 request-sized chunks to replay


def stored_count(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return int(conn.execute("SELECT count(*) FROM audit_interceptionrecord").fetchone()[0])


def kill_replayer_midway(rig, dirs, before: int) -> None:
    """Start an agent process that replays the spool; SIGKILL it once records arrive."""
    replayer = subprocess.Popen(
        [sys.executable, str(ROOT / "bench/faults/replay_once.py"), rig.console.url,
         rig.agent_token, str(dirs["cache_dir"]), str(dirs["spool_dir"])],
        cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while stored_count(rig.database_url) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        replayer.send_signal(signal.SIGKILL)
        replayer.wait(timeout=10)
    finally:
        if replayer.poll() is None:
            replayer.kill()


async def test_a_replay_killed_midway_is_finished_by_the_next_agent_process(live_rig, tmp_path):
    dirs = {"cache_dir": tmp_path / "cache", "spool_dir": tmp_path / "spool"}
    first = ConsoleHooks(live_rig.console.url, live_rig.agent_token, **dirs)
    ledger = Ledger()
    ledger.attach(first)
    live_rig.console.stop()
    for _ in range(SESSIONS):
        await sdk_session(first, first.declaration.document)
    await first.aclose()
    assert first.records.spooled == ledger.submitted == SESSIONS * 10
    live_rig.console.start()
    before = stored_count(live_rig.database_url)
    await asyncio.to_thread(kill_replayer_midway, live_rig, dirs, before)
    killed_at = stored_count(live_rig.database_url) - before
    assert 0 < killed_at < ledger.submitted, "the kill did not land mid-replay"

    restarted = ConsoleHooks(live_rig.console.url, live_rig.agent_token, **dirs)
    await restarted.aclose()

    check = store_check(live_rig.database_url, live_rig.provisioned.agent, ledger)
    assert (check.missing, check.duplicates, check.unexpected) == (0, 0, 0), check.line()
    assert not [p for p in dirs["spool_dir"].iterdir() if p.stat().st_size], "spool not drained"
