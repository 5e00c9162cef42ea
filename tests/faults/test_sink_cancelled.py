"""An agent whose event loop ends while the record sink still holds records (no `aclose()`,
Ctrl-C, a supervisor's stop) spools them; the next sink stores them exactly once."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from agent_hooks import AgentContextBuilder, InterceptionEmitter

from bench.faults.procs import free_port
from bench.faults.stream import Ledger, store_check
from console_client.records import RecordSink

pytestmark = pytest.mark.slow


async def produce_then_exit(sink: RecordSink, ledger: Ledger, count: int) -> None:
    emitter = InterceptionEmitter()
    emitter.set_record_sink(lambda record: ledger_submit(sink, ledger, record))
    builder = AgentContextBuilder(
        agent_id="faults-agent", framework="agent-framework", session_id=uuid.uuid4().hex
    )
    for index in range(count):
        await emitter.emit_unchecked(
            builder.pre_tool_call(call_id=f"c{index}", name="Bash", args={"command": "ls"})
        )
    await asyncio.sleep(0.3)  # the sink is now waiting to retry the console, batch in hand


def ledger_submit(sink: RecordSink, ledger: Ledger, record) -> None:
    ledger.produced.add((record.session_id, record.sequence))
    ledger.submitted += 1
    sink.submit(record, {})


def test_records_held_when_the_loop_ends_are_spooled_and_stored_later(live_rig, tmp_path):
    spool = tmp_path / "spool"
    nowhere = f"http://127.0.0.1:{free_port()}"
    ledger = Ledger()
    down = RecordSink(
        http=lambda: httpx.AsyncClient(base_url=nowhere, timeout=2),
        spool_dir=spool,
        retry_delays=(30.0,),
        flush_interval=0.01,
    )
    asyncio.run(produce_then_exit(down, ledger, 700))
    assert down.spooled == 700

    headers = {"Authorization": f"Bearer {live_rig.agent_token}"}
    up = RecordSink(
        http=lambda: httpx.AsyncClient(base_url=live_rig.console.url, headers=headers, timeout=10),
        spool_dir=spool,
    )
    asyncio.run(up.aclose())
    check = store_check(live_rig.database_url, live_rig.provisioned.agent, ledger)
    assert (check.produced, check.missing, check.duplicates) == (700, 0, 0), check.line()
