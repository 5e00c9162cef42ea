"""A console that cannot be reached makes the escalated call fail closed: the tool does
not run and the pre_tool_call record is a deny (host_error:approval_resolver_failed)."""

from __future__ import annotations

import pytest

from bench.faults.approvals_faults import unreachable_fails_closed

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


@pytest.mark.parametrize("when", ["before", "waiting"])
async def test_the_escalated_tool_does_not_run(live_rig, when):
    result = await unreachable_fails_closed(live_rig, when=when)
    assert not result.tool_ran, result.report()
    assert result.decision == "deny", result.report()
    assert result.reason == "host_error:approval_resolver_failed", result.report()
