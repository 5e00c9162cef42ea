"""Writes of the runtime adapters: a runtime session's record sequence and Stop rejection
count, and the records of each hook call (through the same ingest as `POST /api/v1/records`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.models import Agent, RuntimeSession
from audit.ingest import batch_rows
from audit.services import IngestResult, records_ingest


@dataclass(frozen=True)
class SessionTicket:
    """What one hook call of a runtime session is given: its record sequence number, and the
    Stop rejections in a row so far (for a Stop event)."""

    sequence: int
    stop_rejection_count: int


@transaction.atomic
def runtime_session_advance(
    *,
    actor: Any,
    agent: Agent,
    runtime: str,
    session_id: str,
    custom_agent_name: str = "",
    stop_hook_active: bool | None = None,
) -> SessionTicket:
    """Hand out the next record sequence of (agent, session_id); the row is created on the
    session's first call. A Stop the runtime says is not a continuation (stop_hook_active
    false) starts a new run of rejections."""
    session, _created = RuntimeSession.objects.select_for_update().get_or_create(
        agent=agent,
        session_id=session_id,
        defaults={"runtime": runtime, "custom_agent_name": custom_agent_name},
    )
    ticket = SessionTicket(
        sequence=session.next_sequence,
        stop_rejection_count=0 if stop_hook_active is False else session.stop_rejection_count,
    )
    session.next_sequence += 1
    session.save(update_fields=["next_sequence", "updated_at"])
    return ticket


def runtime_session_stop_settle(
    *, actor: Any, agent: Agent, session_id: str, rejections: int
) -> None:
    """After a Stop: the rejections in a row (0 once the agent was let stop)."""
    RuntimeSession.objects.filter(agent=agent, session_id=session_id).update(
        stop_rejection_count=rejections
    )


def runtime_records_store(*, actor: Any, agent: Agent, items: list[dict[str, Any]]) -> IngestResult:
    """Validate and store the records of one hook call exactly as `POST /api/v1/records`
    would (the SDK schema, the console's payload-free rules, the same ingest)."""
    return records_ingest(actor=actor, agent=agent, rows=batch_rows(items))
