"""Writes of the audit app. Callers run inside their own transaction."""

from __future__ import annotations

from typing import Any

from audit.models import GovernanceEvent
from console.auth import actor_label, actor_user


def governance_event_record(
    *,
    actor: Any,
    action: str,
    summary: str,
    agent: Any = None,
    target: Any = None,
    before: Any = None,
    after: Any = None,
) -> GovernanceEvent:
    return GovernanceEvent.objects.create(
        action=action,
        actor=actor_user(actor),
        actor_label=actor_label(actor),
        agent=agent,
        agent_slug=getattr(agent, "slug", "") or "",
        object_type=type(target).__name__ if target is not None else "",
        object_id=str(getattr(target, "pk", "") or ""),
        summary=summary[:500],
        before=before,
        after=after,
    )
