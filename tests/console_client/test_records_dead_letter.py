"""The record sink never drops a record silently: what the console refuses goes to the
dead-letter file beside the spool, is counted, and is reported to the console."""

from __future__ import annotations

import json

import httpx
import pytest
from agent_hooks import AgentContextBuilder, InterceptionEmitter, Verdict

from console_client.records import DEAD_LETTER_PATH, RecordSink
from tests.console_client.scripted_http import ScriptedHTTP

pytestmark = pytest.mark.asyncio
RECORDS = "/api/v1/records"


class Allow:
    def intercept(self, context):
        return Verdict.allow()


async def records(count: int, session_id: str = "s1"):
    emitter = InterceptionEmitter()
    emitter.register(Allow(), name="hk_1")
    builder = AgentContextBuilder(agent_id="a", framework="agent-framework", session_id=session_id)
    for index in range(count):
        await emitter.emit_unchecked(
            builder.pre_tool_call(call_id=f"c{index}", name="Bash", args={"n": index})
        )
    return emitter.results


def refusal(*pointers: str, status: int = 400) -> tuple[int, dict]:
    fields = {pointer: ["must be at most 200 characters."] for pointer in pointers}
    message = f"Item 1 is invalid at {pointers[0]}: ..." if pointers else "refused"
    return status, {"error": {"code": "invalid", "message": message, "fields": fields}}


@pytest.fixture
def console():
    server = ScriptedHTTP().start()
    server.route("POST", DEAD_LETTER_PATH, (202, {"accepted": 1, "duplicates": 0}))
    yield server
    server.stop()


def sink_for(url: str, tmp_path, **options) -> RecordSink:
    return RecordSink(
        http=lambda: httpx.AsyncClient(base_url=url, timeout=2),
        spool_dir=tmp_path / "spool",
        flush_interval=0.01,
        retry_delays=(0.01,),
        **options,
    )


def posted(console, path):
    return [seen.body for seen in console.seen if seen.path == path]


def dead_lines(sink):
    return [json.loads(line) for line in sink.dead_letter_file.read_text().splitlines()]


async def test_a_refused_batch_is_dead_lettered_counted_and_reported(console, tmp_path):
    console.route("POST", RECORDS, refusal())
    sink = sink_for(console.url, tmp_path)
    for record in await records(3):
        sink.submit(record, {"tool_name": "Bash"})
    await sink.aclose()
    assert sink.dead_lettered == 3 and sink.delivered == 0 and sink.spooled == 0
    assert sink.dead_letter_file.parent == sink.spool_file.parent
    lines = dead_lines(sink)
    assert [line["item"]["record"]["sequence"] for line in lines] == [0, 1, 2]
    assert {line["status"] for line in lines} == {400}
    assert lines[0]["error"]["code"] == "invalid" and lines[0]["refused_at"]
    [report] = [r for body in posted(console, DEAD_LETTER_PATH) for r in body]
    assert report == {
        "batch": lines[0]["batch"],
        "records": 3,
        "status": 400,
        "error": "invalid: refused",
        "refused_at": lines[0]["refused_at"],
    }
    assert not sink.spool_file.exists()


async def test_only_the_items_the_console_names_are_dead_lettered(console, tmp_path):
    console.route(
        "POST",
        RECORDS,
        refusal("/1/record/session_id", "/3/meta/tool_name"),
        (202, {"accepted": 3, "duplicates": 0}),
    )
    sink = sink_for(console.url, tmp_path)
    for record in await records(5):
        sink.submit(record, {})
    await sink.aclose()
    assert sink.dead_lettered == 2 and sink.delivered == 3
    assert [line["item"]["record"]["sequence"] for line in dead_lines(sink)] == [1, 3]
    [first, resend] = posted(console, RECORDS)
    assert len(first) == 5
    assert [item["record"]["sequence"] for item in resend] == [0, 2, 4]


@pytest.mark.parametrize("status", [401, 403, 429, 503])
async def test_answers_about_the_console_not_the_batch_are_spooled(console, tmp_path, status):
    console.route("POST", RECORDS, (status, {"error": {"code": "x", "message": "later"}}))
    sink = sink_for(console.url, tmp_path)
    for record in await records(2):
        sink.submit(record, {})
    await sink.aclose()
    assert sink.spooled == 2 and sink.dead_lettered == 0
    assert not sink.dead_letter_file.exists()
    assert posted(console, DEAD_LETTER_PATH) == []


@pytest.mark.parametrize("status", [413, 415, 422])
async def test_other_refusals_of_a_single_record_are_dead_lettered(console, tmp_path, status):
    console.route("POST", RECORDS, (status, b"<html>refused by a proxy</html>"))
    sink = sink_for(console.url, tmp_path)
    for record in await records(1):
        sink.submit(record, {})
    await sink.aclose()
    assert sink.dead_lettered == 1
    [line] = dead_lines(sink)
    assert line["status"] == status and line["error"] == "<html>refused by a proxy</html>"


async def test_an_unreported_dead_letter_is_reported_by_the_next_sink_once(console, tmp_path):
    console.route("POST", RECORDS, refusal(), (202, {"accepted": 1, "duplicates": 0}))
    console.route(
        "POST", DEAD_LETTER_PATH, (503, {}), (503, {}), (202, {"accepted": 1, "duplicates": 0})
    )
    first = sink_for(console.url, tmp_path)
    for record in await records(2):
        first.submit(record, {})
    await first.aclose()
    assert first.dead_lettered == 2
    assert len(posted(console, DEAD_LETTER_PATH)) == 2  # after the refusal, and at close

    second = sink_for(console.url, tmp_path)
    for record in await records(1, session_id="s2"):
        second.submit(record, {})
    await second.aclose()
    reports = posted(console, DEAD_LETTER_PATH)
    assert len(reports) == 3 and reports[0] == reports[1] == reports[2]
    assert reports[2][0]["records"] == 2

    third = sink_for(console.url, tmp_path)
    for record in await records(1, session_id="s3"):
        third.submit(record, {})
    await third.aclose()
    assert len(posted(console, DEAD_LETTER_PATH)) == 3  # nothing left to report
