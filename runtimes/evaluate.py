"""One hook call of another agent runtime, end to end.

1. read the runtime's input (`console_client.runtimes.parse`);
2. in one short database visit: the caller's token, the Stop rejections so far (Stop only)
   and the agent's effective declaration (cached by agent revision: usually no query);
3. evaluate it with console_client's own implementation (`evaluate_event`: the SDK emitter
   over the declaration, console_client's interceptors, the console-side runners and
   resolver); an event the console cannot govern is only recorded (`record_ungoverned`);
4. answer in the runtime's own format, then, once the answer is sent, store the payload-free
   records through the records ingest and settle the Stop counter (RecordingResponse).

No database connection is held between the visits, however long a reviewer takes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_hooks import InterceptionRecord
from django.db import connection
from django.http import Http404, HttpRequest, JsonResponse

from agents.declaration import declaration_document
from agents.models import Agent
from agents.selectors import get_custom_agent
from agents.validation import NAME_RE
from approvals.longpoll import agent_principal, released
from console.actors import AgentPrincipal
from console_client.client import STOP_REJECTION_CAP
from console_client.evaluation import (
    EventInput,
    EventOutcome,
    evaluate_event,
    record_ungoverned,
)
from console_client.reasons import reason_hooks
from console_client.records import record_item
from console_client.runtime_answers import answer
from console_client.runtimes import NO_OBJECTION, STOP, Reply, RuntimeEvent
from console_client.transcript import SessionTranscript
from runtimes.execution import EscalationResolver, console_registry
from runtimes.services import (
    runtime_records_store,
    runtime_session_stop_rejections,
    runtime_session_stop_settle,
)

log = logging.getLogger(__name__)

APPROVED_TEXT = "Approved by a reviewer in the governance console."
DECLARATIONS_CACHED = 512

# Declarations by (agent, revision, mode, custom agent): every configuration change bumps the
# agent's revision, so an entry is never stale, and a hook call needs no query for it.
_declarations: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_declarations_lock = threading.Lock()
_sequence = {"last": 0}
_sequence_lock = threading.Lock()


def next_sequence() -> int:
    """A record sequence for one hook call: microseconds since the epoch, strictly increasing
    within this process. Records are keyed (agent, session, sequence); runtime sessions have
    no counter of their own, and a shared one would cost a database write per call."""
    with _sequence_lock:
        value = max(time.time_ns() // 1000, _sequence["last"] + 1)
        _sequence["last"] = value
        return value


def effective_declaration(agent: Agent, custom_agent_name: str) -> dict[str, Any]:
    """The agent's declaration (+ the custom agent's hooks); Http404 for an unknown one."""
    # created_at too: a flushed database (tests) may hand an old primary key out again.
    key = (agent.pk, agent.created_at, agent.revision, agent.mode, custom_agent_name)
    with _declarations_lock:
        found = _declarations.get(key)
        if found is not None:
            _declarations.move_to_end(key)
            return found
    if custom_agent_name and not NAME_RE.match(custom_agent_name):
        # A name no custom agent can have (a NUL byte, say) never reaches the database.
        raise Http404("No such custom agent.")
    custom_agent = get_custom_agent(agent, custom_agent_name) if custom_agent_name else None
    document = declaration_document(agent, custom_agent)
    with _declarations_lock:
        _declarations[key] = document
        while len(_declarations) > DECLARATIONS_CACHED:
            _declarations.popitem(last=False)
    return document


@dataclass(frozen=True)
class Prepared:
    agent: Agent
    custom_agent_name: str
    sequence: int
    stop_rejection_count: int
    document: dict[str, Any]


def open_call(
    request: HttpRequest, event: RuntimeEvent | None, custom_agent_name: str
) -> tuple[AgentPrincipal, Prepared | None]:
    """The one database visit before evaluating: who calls (NotAuthenticated or Forbidden
    otherwise), and what to evaluate."""
    principal = agent_principal(request)
    if event is None:
        return principal, None
    agent = principal.agent
    stops = 0
    if event.event == STOP:
        stops = runtime_session_stop_rejections(
            agent=agent, session_id=event.session_id, stop_hook_active=event.stop_hook_active
        )
    document = effective_declaration(agent, custom_agent_name)
    return principal, Prepared(agent, custom_agent_name, next_sequence(), stops, document)


def _finish(
    principal: AgentPrincipal,
    prepared: Prepared,
    event: RuntimeEvent,
    records: list[InterceptionRecord],
    stop_rejections: int | None,
) -> None:
    meta = {
        "custom_agent": prepared.custom_agent_name or None,
        "tool_name": event.tool_name or None,
        "framework": event.runtime,
        "revision": prepared.agent.revision,
    }
    kept = reason_hooks(prepared.document)
    items = [record_item(record, meta, kept) for record in records]
    if items:
        runtime_records_store(actor=principal, agent=prepared.agent, items=items)
    if stop_rejections is not None and (stop_rejections or prepared.stop_rejection_count):
        runtime_session_stop_settle(
            actor=principal,
            agent=prepared.agent,
            runtime=event.runtime,
            session_id=event.session_id,
            rejections=stop_rejections,
        )


def _event_input(event: RuntimeEvent, prepared: Prepared) -> EventInput:
    agent = prepared.agent
    return EventInput(
        event=event.event or "",
        agent_id=agent.slug,
        agent_name=prepared.custom_agent_name or agent.slug,
        framework=event.runtime,
        session_id=event.session_id,
        sequence=prepared.sequence,
        tool_name=event.tool_name,
        tool_call_id=event.tool_call_id,
        tool_input=event.tool_input,
        tool_result=event.tool_result,
        tool_failed=event.tool_failed,
        final_output=event.final_output,
        stop_rejection_count=prepared.stop_rejection_count,
    )


def reply_for(event: RuntimeEvent, outcome: EventOutcome, stop_rejection_count: int) -> Reply:
    """The runtime-neutral answer. evaluate_only never changes what the runtime does."""
    if not outcome.enforced:
        return NO_OBJECTION
    if event.event == STOP:
        if outcome.stop_reasons and stop_rejection_count < STOP_REJECTION_CAP:
            return Reply("continue", "\n".join(outcome.stop_reasons))
        return NO_OBJECTION
    if outcome.denied:
        return Reply("deny", outcome.message)
    if outcome.approved:
        return Reply("allow", APPROVED_TEXT, outcome.updated_input)
    if outcome.additional_context:
        return Reply("context", outcome.additional_context)
    return NO_OBJECTION


async def _evaluate(
    principal: AgentPrincipal,
    event: RuntimeEvent,
    prepared: Prepared,
    records: list[InterceptionRecord],
) -> Reply:
    resolver = EscalationResolver(
        principal=principal,
        meta={
            "custom_agent": prepared.custom_agent_name or None,
            "tool_name": event.tool_name or None,
            "session_id": event.session_id,
            "framework": event.runtime,
            "revision": prepared.agent.revision,
            "cwd": event.cwd or None,
        },
    )
    transcript = SessionTranscript.create(uuid.uuid4().hex)
    try:
        outcome = await evaluate_event(
            document=prepared.document,
            registry=console_registry(resolver),
            event=_event_input(event, prepared),
            transcript=transcript,
            resolutions=lambda: resolver.resolution,
            record_sink=records.append,
        )
    finally:
        transcript.remove()
    return reply_for(event, outcome, prepared.stop_rejection_count)


@dataclass
class Answered:
    """The runtime's answer, and the writes that follow it (`store`: the records and the
    Stop counter), run once the answer has been sent (RecordingResponse.close)."""

    body: dict[str, Any]
    store: Callable[[], None]


async def runtime_hook_answer(
    *, principal: AgentPrincipal, event: RuntimeEvent, prepared: Prepared
) -> Answered:
    """Evaluate one hook call and answer in the runtime's format. The record is written
    after the answer, like the agent side's record sink never holds the agent up; a call the
    runtime hangs up on (its hook timeout) is recorded at once, fail-closed."""
    records: list[InterceptionRecord] = []
    try:
        if event.governed:
            reply = await _evaluate(principal, event, prepared, records)
        else:
            records.append(
                await record_ungoverned(
                    event=_event_input(event, prepared),
                    point=event.kind.point,
                    mode=prepared.agent.mode,
                )
            )
            reply = NO_OBJECTION
    except asyncio.CancelledError:
        try:
            await asyncio.shield(released(_finish)(principal, prepared, event, records, None))
        except Exception:
            log.exception("runtime hooks: the record of an abandoned hook call was not stored")
        raise
    stop_rejections = None
    if event.event == STOP:
        stop_rejections = prepared.stop_rejection_count + 1 if reply.action != "none" else 0
    return Answered(
        answer(event, reply),
        functools.partial(_finish, principal, prepared, event, records, stop_rejections),
    )


class RecordingResponse(JsonResponse):
    """A JSON answer whose `close()` (called by the server once the body has been sent, and
    by the test client) runs the writes that follow it, then hands the database session
    back. A write that fails is logged: the runtime already has its answer."""

    def __init__(self, answered: Answered) -> None:
        super().__init__(answered.body)
        self._store: Callable[[], None] | None = answered.store

    def close(self) -> None:
        store, self._store = self._store, None
        try:
            if store is not None:
                store()
        except Exception:
            log.exception("runtime hooks: the record of an answered hook call was not stored")
        finally:
            if store is not None and not connection.in_atomic_block:
                connection.close()
            super().close()
