"""Writes of the runtime adapters: the records of each hook call (through the same ingest as
`POST /api/v1/records`) and a runtime session's Stop rejections in a row."""

from __future__ import annotations

from typing import Any

from agents.models import Agent, RuntimeSession
from audit.ingest import batch_items
from audit.services import IngestResult, records_ingest
from console.actors import Actor


def runtime_session_stop_rejections(
    *, agent: Agent, session_id: str, stop_hook_active: bool | None
) -> int:
    """The Stop rejections in a row so far in this runtime session. A Stop the runtime says
    is not a continuation (stop_hook_active false) starts a new run: 0."""
    if stop_hook_active is False:
        return 0
    found = (
        RuntimeSession.objects.filter(agent=agent, session_id=session_id)
        .values_list("stop_rejection_count", flat=True)
        .first()
    ) or 0
    # The runtime saying "continuation" means at least one rejection came before, even when
    # the previous call's counter (written after its answer was sent) has not landed yet.
    return max(found, 1) if stop_hook_active else found


def runtime_session_stop_settle(
    *, actor: Actor | None, agent: Agent, runtime: str, session_id: str, rejections: int
) -> RuntimeSession:
    """After a Stop: the rejections in a row (0 once the agent was let stop)."""
    session, _created = RuntimeSession.objects.update_or_create(
        agent=agent,
        session_id=session_id,
        defaults={"runtime": runtime, "stop_rejection_count": rejections},
    )
    return session


def runtime_records_store(
    *, actor: Actor | None, agent: Agent, items: list[dict[str, Any]]
) -> IngestResult:
    """Validate and store the records of one hook call exactly as `POST /api/v1/records`
    would (the SDK schema, the console's payload-free rules, the same ingest)."""
    return records_ingest(actor=actor, agent=agent, items=batch_items(items))
