"""A steady stream of interception records from `console_client`, and the exactly-once check.

Every record goes through a real `ConsoleHooks` record sink (batching, retries, spool,
replay). The ledger wraps `RecordSink.submit`, so the key (session_id, sequence) of every
record the agent produced is kept *before* the sink ships it. Two sources:

- `sdk`: the AGENT-HOOKS SDK's own `InterceptionEmitter`, built from the console's
  declaration for this agent, emitting whole sessions (startup, input, model and tool
  calls, output, shutdown) at a fixed record rate: real SDK records, cheap to make;
- `agent`: the demo agent (examples/demo_agent.py: a real agent_framework Agent with a
  scripted model) run by `ConsoleHooks.run` in a few concurrent loops, as fast as it goes.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
from agent_hooks import AgentContextBuilder, InterceptionEmitter, InterceptionRecord

from console_client import ConsoleHooks
from console_client.client import console_registry

TICK = 0.05


@dataclass
class Ledger:
    """Keys of every record handed to the sink, in the agent process."""

    produced: set[tuple[str, int]] = field(default_factory=set)
    submitted: int = 0

    def attach(self, hooks: ConsoleHooks) -> None:
        sink = hooks.records
        original = sink.submit

        def submit(record: InterceptionRecord, meta: dict[str, Any]) -> None:
            self.produced.add((record.session_id, record.sequence))
            self.submitted += 1
            original(record, meta)

        sink.submit = submit  # type: ignore[method-assign]


async def sdk_session(hooks: ConsoleHooks, emitter_doc: Any, tool_calls: int = 1) -> int:
    """One whole hooks session through the SDK emitter; returns the records emitted."""
    emitter = InterceptionEmitter.from_declaration_value(emitter_doc, console_registry())
    meta = {"framework": "agent-framework", "revision": hooks.declaration.revision}
    tool_points = {"pre_tool_call", "post_tool_call"}

    def sink(record: InterceptionRecord) -> None:
        point = record.interception_point.value
        hooks.records.submit(
            record, {**meta, "tool_name": "Bash" if point in tool_points else None}
        )

    emitter.set_record_sink(sink)
    builder = AgentContextBuilder(
        agent_id=hooks.declaration.agent,
        framework="agent-framework",
        session_id=uuid.uuid4().hex,
        agent_name=hooks.agent_name,
    )
    messages = [{"role": "user", "content": "How much disk is left on web-1?"}]
    await emitter.emit(builder.agent_startup(tools_registered=["Bash"]))
    await emitter.emit(builder.input(content=messages[0]["content"]))
    for index in range(tool_calls):
        call = {"id": f"call-{index}", "name": "Bash", "args": {"command": "df -h"}}
        await emitter.emit(builder.pre_model_call(model_id="scripted", messages=messages))
        await emitter.emit(
            builder.post_model_call(
                model_id="scripted", content="", tool_calls=[call], finish_reason="tool_calls"
            )
        )
        await emitter.emit(
            builder.pre_tool_call(call_id=call["id"], name="Bash", args=call["args"])
        )
        await emitter.emit(
            builder.post_tool_call(call_id=call["id"], name="Bash", args=call["args"], value="61%")
        )
    await emitter.emit(builder.pre_model_call(model_id="scripted", messages=messages))
    await emitter.emit(
        builder.post_model_call(
            model_id="scripted", content="39G free", tool_calls=[], finish_reason="stop"
        )  # fmt: skip
    )
    await emitter.emit(builder.output(content="39G free"))
    await emitter.emit_unchecked(builder.agent_shutdown(reason="completed"))
    return 4 + 4 * tool_calls + 2


@dataclass
class StreamStats:
    sessions: int = 0
    records: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


async def sdk_stream(hooks: ConsoleHooks, *, rate: float, seconds: float) -> StreamStats:
    """Emit whole sessions so that `rate` records per second leave the agent, for `seconds`."""
    stats = StreamStats()
    document = hooks.declaration.document
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        while stats.records < rate * elapsed:
            stats.records += await sdk_session(hooks, document)
            stats.sessions += 1
        await asyncio.sleep(TICK)
    stats.seconds = time.monotonic() - started
    return stats


async def agent_stream(hooks: ConsoleHooks, *, loops: int, seconds: float) -> StreamStats:
    """The demo agent's ops tasks through `ConsoleHooks.run`, `loops` at a time."""
    from examples import demo_agent as demo

    stats = StreamStats()
    deadline = time.monotonic() + seconds
    started = time.monotonic()

    async def loop(offset: int) -> None:
        done = offset
        while time.monotonic() < deadline:
            task, steps = demo.OPS_TASKS[done % len(demo.OPS_TASKS)]
            answer = await demo.run_task(hooks, task, list(steps))
            if answer.startswith("blocked"):
                stats.errors.append(answer)
            stats.sessions += 1
            done += 1

    await asyncio.gather(*(loop(i) for i in range(loops)))
    stats.seconds = time.monotonic() - started
    return stats


@dataclass
class StoreCheck:
    produced: int
    stored_rows: int
    missing: int
    duplicates: int
    unexpected: int
    sealed: int
    seal_pending: int

    @property
    def chain_consistent(self) -> bool:
        """Every stored record is sealed or waiting to be: none fell out of the chain."""
        return self.sealed + self.seal_pending == self.stored_rows

    @property
    def exactly_once(self) -> bool:
        return self.missing == 0 and self.duplicates == 0 and self.unexpected == 0

    def line(self) -> str:
        return (
            f"produced={self.produced} stored={self.stored_rows} missing={self.missing} "
            f"duplicates={self.duplicates} unexpected={self.unexpected} "
            f"sealed={self.sealed} seal_pending={self.seal_pending}"
        )


def store_check(database_url: str, agent: str, ledger: Ledger) -> StoreCheck:
    """Compare the ledger with the rows the console stored for `agent` in the ledger's
    sessions (earlier runs on the same database are not counted)."""
    sessions = sorted({session_id for session_id, _sequence in ledger.produced})
    with psycopg.connect(database_url, connect_timeout=10) as conn:
        # One snapshot: a seal committing between the counts would skew them.
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        rows = conn.execute(
            "SELECT r.session_id, r.sequence FROM audit_interceptionrecord r "
            "JOIN agents_agent a ON a.id = r.agent_id "
            "WHERE a.slug = %s AND r.session_id = ANY(%s)",
            [agent, sessions],
        ).fetchall()
        sealed = conn.execute(
            "SELECT count(*) FROM audit_recordseal s "
            "JOIN audit_interceptionrecord r ON r.id = s.record_id "
            "JOIN agents_agent a ON a.id = r.agent_id "
            "WHERE a.slug = %s AND r.session_id = ANY(%s)",
            [agent, sessions],
        ).fetchone()
        pending = conn.execute(
            "SELECT count(*) FROM audit_recordsealpending p "
            "CROSS JOIN LATERAL jsonb_array_elements_text(p.record_ids) AS e(id) "
            "JOIN audit_interceptionrecord r ON r.id = e.id::bigint "
            "JOIN agents_agent a ON a.id = r.agent_id "
            "WHERE a.slug = %s AND r.session_id = ANY(%s)",
            [agent, sessions],
        ).fetchone()
    counts = Counter((session_id, int(sequence)) for session_id, sequence in rows)
    stored = set(counts)
    return StoreCheck(
        produced=len(ledger.produced),
        stored_rows=len(rows),
        missing=len(ledger.produced - stored),
        duplicates=sum(n - 1 for n in counts.values()),
        unexpected=len(stored - ledger.produced),
        sealed=int(sealed[0]) if sealed else 0,
        seal_pending=int(pending[0]) if pending else 0,
    )
