"""Redis (the push) killed while the agent's long-poll waits: each reviewer decision still
reaches the agent, within one long-poll period, and the approved tool runs."""

from __future__ import annotations

import pytest

from bench.faults.approvals_faults import decisions_reach_agent

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
LONG_POLL = 15


async def test_decisions_reach_the_agent_within_one_long_poll_without_redis(live_rig):
    result = await decisions_reach_agent(
        live_rig, name="push lost", escalations=2, long_poll_seconds=LONG_POLL
    )
    assert result.tool_runs == 2, result.report()
    assert len(result.latencies) == 2, result.report()
    assert max(result.latencies) <= LONG_POLL, result.report()
