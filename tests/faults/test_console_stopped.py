"""The console stopped (SIGKILL, ~10 s) during a 300 records/s stream from console_client,
then started again: the sink spools, replays, and every record is stored exactly once."""

from __future__ import annotations

import pytest

from bench.faults.records_faults import record_fault_run, stop_console

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


async def test_every_record_is_stored_once_after_the_console_comes_back(live_rig):
    result = await record_fault_run(
        live_rig, "console", stop_console, rate=300, before=2, down=10, after=6
    )
    assert result.figures["spooled"] > 0, "the outage never reached the spool"
    assert result.check.exactly_once, result.report()
    assert result.check.chain_consistent, result.report()
    assert result.spool_left == 0, result.report()
