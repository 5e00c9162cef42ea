"""Batches are cut to fit the console's request-size limit: records with long hook reasons
(~4 KB each) are all stored, none stuck in the spool behind a 413."""

from __future__ import annotations

import uuid

import pytest
from agent_hooks import AgentContextBuilder, InterceptionEmitter, Verdict

from bench.faults.stream import Ledger, store_check
from console_client import ConsoleHooks

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
REASON = "the command touches a production host; " * 20


class Warns:
    def __init__(self, index: int) -> None:
        self.index = index

    def intercept(self, context):
        return Verdict.warn(reason=f"hook {self.index}: {REASON}")


async def test_records_larger_than_one_request_allows_are_all_stored(live_rig, tmp_path):
    hooks = ConsoleHooks(
        live_rig.console.url,
        live_rig.agent_token,
        cache_dir=tmp_path / "cache",
        spool_dir=tmp_path / "spool",
    )
    ledger = Ledger()
    ledger.attach(hooks)
    emitter = InterceptionEmitter()
    for index in range(4):
        emitter.register(Warns(index), name=f"PostToolUse/hook-{index}")
    emitter.set_record_sink(lambda record: hooks.records.submit(record, {}))
    builder = AgentContextBuilder(
        agent_id="faults-agent", framework="agent-framework", session_id=uuid.uuid4().hex
    )
    for index in range(1000):
        await emitter.emit_unchecked(
            builder.pre_tool_call(call_id=f"c{index}", name="Bash", args={"command": "ls"})
        )
    await hooks.aclose()
    check = store_check(live_rig.database_url, live_rig.provisioned.agent, ledger)
    assert check.produced == 1000
    assert (check.missing, check.duplicates) == (0, 0), check.line()
    assert hooks.records.spooled == 0
