"""The record sink: payload-free wire, batching, never blocking, spool and replay."""

from __future__ import annotations

import asyncio
import json

import httpx
import jsonschema
import pytest
from agent_hooks import AgentContextBuilder, InterceptionEmitter, Verdict
from agent_hooks.ctk._schemas import per_point_registry

from console_client.records import RecordSink, record_item
from tests.console_client.scripted_http import ScriptedHTTP

pytestmark = pytest.mark.asyncio
MARKER = "SECRET-ARGUMENT-7f3a"


class Blocker:
    def intercept(self, context):
        return Verdict.deny(reason="console:hook_blocked", message=f"blocked {MARKER}")


async def records(count: int):
    emitter = InterceptionEmitter()
    emitter.register(Blocker(), name="hk_1")
    builder = AgentContextBuilder(agent_id="a", framework="agent-framework", session_id="s1")
    for index in range(count):
        await emitter.emit_unchecked(
            builder.pre_tool_call(call_id=f"c{index}", name="Bash", args={"command": MARKER})
        )
    return emitter.results


@pytest.fixture
def console():
    server = ScriptedHTTP().start()
    server.route("POST", "/api/v1/records", (202, {"accepted": 1, "duplicates": 0}))
    yield server
    server.stop()


def sink_for(url: str, tmp_path, **options) -> RecordSink:
    return RecordSink(
        http=lambda: httpx.AsyncClient(base_url=url, timeout=2),
        spool_dir=tmp_path / "spool",
        flush_interval=0.01,
        **options,
    )


async def test_items_pass_the_record_schema_and_carry_no_payload_or_message():
    (record,) = await records(1)
    item = record_item(
        record,
        {"custom_agent": "ops", "tool_name": "Bash", "framework": "agent-framework", "revision": 3},
    )
    validator = jsonschema.Draft202012Validator(
        {"$ref": "interception-record.schema.json"}, registry=per_point_registry()
    )
    validator.validate(item["record"])
    assert MARKER not in json.dumps(item)
    assert item["meta"] == {
        "custom_agent": "ops",
        "tool_name": "Bash",
        "framework": "agent-framework",
        "revision": 3,
    }
    assert item["record"]["verdict"]["reason"] == "console:hook_blocked"


async def test_submit_never_waits_for_the_console_and_batches_at_most_the_limit(console, tmp_path):
    sink = sink_for(console.url, tmp_path, batch_max=500)
    made = await records(1200)
    assert not asyncio.iscoroutinefunction(sink.submit)
    for record in made:
        sink.submit(record, {})
    # Nothing has reached the console before the loop gets control back: a submit
    # that sent (or waited for) a delivery would have left requests here.
    assert console.seen == [] and sink.delivered == 0
    await sink.aclose()
    sizes = [len(seen.body) for seen in console.seen]
    assert sum(sizes) == 1200
    assert max(sizes) <= 500
    assert sink.delivered == 1200


async def test_unreachable_console_spools_and_a_later_sink_replays(console, tmp_path):
    down = sink_for("http://127.0.0.1:9", tmp_path, retry_delays=(0.01,))
    for record in await records(3):
        down.submit(record, {"tool_name": "Bash"})
    await down.aclose()
    assert down.spooled == 3
    spooled = down.spool_file.read_text().splitlines()
    assert len(spooled) == 3 and MARKER not in "".join(spooled)

    up = sink_for(console.url, tmp_path)
    for record in await records(1):
        up.submit(record, {})
    await up.aclose()
    delivered = [item for seen in console.seen for item in seen.body]
    assert len(delivered) == 4
    assert not up.spool_file.exists()


async def test_a_5xx_is_retried_before_anything_is_spooled(tmp_path):
    server = ScriptedHTTP().start()
    server.route("POST", "/api/v1/records", (503, {}), (202, {"accepted": 1, "duplicates": 0}))
    try:
        sink = sink_for(server.url, tmp_path, retry_delays=(0.01, 0.01))
        for record in await records(1):
            sink.submit(record, {})
        await sink.aclose()
    finally:
        server.stop()
    assert sink.spooled == 0
    assert sink.delivered == 1
    assert len(server.seen) == 2


async def test_submit_from_the_emitter_does_not_block_the_loop(tmp_path):
    sink = sink_for("http://127.0.0.1:9", tmp_path, retry_delays=(0.2,))
    emitter = InterceptionEmitter()
    emitter.register(Blocker())
    emitter.set_record_sink(lambda record: sink.submit(record, {}))
    builder = AgentContextBuilder(agent_id="a", framework="f", session_id="s")
    await emitter.emit_unchecked(builder.input(content="hi"))
    # The emit returned before the sink had even tried the (unreachable) console: a
    # blocking submit would have failed its delivery and spooled the record by now.
    assert (sink.delivered, sink.spooled) == (0, 0)
    await asyncio.sleep(0)
    await sink.aclose()
    assert sink.spooled == 1
