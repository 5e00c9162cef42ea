"""One hook call of another agent runtime, end to end (DESIGN §6).

1. read the runtime's input (`console_client.runtimes.parse`);
2. in one short database visit: the custom agent, the session's next record sequence (and
   its Stop rejections so far), the agent's effective declaration;
3. evaluate it with console_client's own implementation (`evaluate_event`: the SDK emitter
   over the declaration, console_client's interceptors, the console-side runners and
   resolver); an event the console cannot govern is only recorded (`record_ungoverned`);
4. in a second short visit: store the payload-free records through the records ingest and
   settle the Stop counter; then answer in the runtime's own format.

No database connection is held between the visits, however long a reviewer takes.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from agent_hooks import InterceptionRecord

from agents.declaration import declaration_document
from agents.models import Agent
from agents.runtime_hooks.execution import EscalationResolver, console_registry
from agents.runtime_hooks.services import (
    SessionTicket,
    runtime_records_store,
    runtime_session_advance,
    runtime_session_stop_settle,
)
from agents.selectors import get_custom_agent
from approvals.longpoll import released
from console.auth import AgentPrincipal
from console_client.client import STOP_REJECTION_CAP
from console_client.evaluation import (
    EventInput,
    EventOutcome,
    evaluate_event,
    record_ungoverned,
)
from console_client.records import record_item
from console_client.runtimes import NO_OBJECTION, STOP, Reply, RuntimeEvent, answer, parse
from console_client.transcript import SessionTranscript

APPROVED_TEXT = "Approved by a reviewer in the governance console."


@dataclass(frozen=True)
class Prepared:
    agent: Agent
    custom_agent_name: str
    ticket: SessionTicket
    document: dict[str, Any] | None


def _prepare(principal: AgentPrincipal, event: RuntimeEvent, custom_agent_name: str) -> Prepared:
    agent = principal.agent
    custom_agent = get_custom_agent(agent, custom_agent_name) if custom_agent_name else None
    ticket = runtime_session_advance(
        actor=principal,
        agent=agent,
        runtime=event.runtime,
        session_id=event.session_id,
        custom_agent_name=custom_agent_name,
        stop_hook_active=event.stop_hook_active if event.event == STOP else None,
    )
    document = declaration_document(agent, custom_agent) if event.governed else None
    return Prepared(agent, custom_agent_name, ticket, document)


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
    items = [record_item(record, meta) for record in records]
    if items:
        runtime_records_store(actor=principal, agent=prepared.agent, items=items)
    if stop_rejections is not None:
        runtime_session_stop_settle(
            actor=principal,
            agent=prepared.agent,
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
        sequence=prepared.ticket.sequence,
        tool_name=event.tool_name,
        tool_call_id=event.tool_call_id,
        tool_input=event.tool_input,
        tool_result=event.tool_result,
        tool_failed=event.tool_failed,
        final_output=event.final_output,
        stop_rejection_count=prepared.ticket.stop_rejection_count,
        turn=prepared.ticket.sequence,
    )


def reply_for(event: RuntimeEvent, outcome: EventOutcome, ticket: SessionTicket) -> Reply:
    """The runtime-neutral answer. evaluate_only never changes what the runtime does."""
    if not outcome.enforced:
        return NO_OBJECTION
    if event.event == STOP:
        if outcome.stop_reasons and ticket.stop_rejection_count < STOP_REJECTION_CAP:
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
    assert prepared.document is not None
    resolver = EscalationResolver(
        principal=principal,
        meta={
            "custom_agent": prepared.custom_agent_name or None,
            "tool_name": event.tool_name or None,
            "session_id": event.session_id,
            "turn": prepared.ticket.sequence,
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
    return reply_for(event, outcome, prepared.ticket)


async def runtime_hook_call(
    *,
    principal: AgentPrincipal,
    runtime: str,
    body: Any,
    event_name: str | None = None,
    custom_agent_name: str = "",
) -> dict[str, Any]:
    """Answer one hook call of `runtime` for `principal`'s agent, in the runtime's format.
    Raises RuntimeInputError (bad input, nothing written) or Http404 (no such custom agent)."""
    event = parse(runtime, body, event_name)
    prepared = await released(_prepare)(principal, event, custom_agent_name)
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
        # The runtime hung up (its hook timeout): the fail-closed record is still stored.
        await asyncio.shield(released(_finish)(principal, prepared, event, records, None))
        raise
    stop_rejections = None
    if event.event == STOP:
        stop_rejections = prepared.ticket.stop_rejection_count + 1 if reply.action != "none" else 0
    await released(_finish)(principal, prepared, event, records, stop_rejections)
    return answer(event, reply)
