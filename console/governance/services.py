"""The one write of the governance log. It runs inside the caller's transaction, so the event
commits or rolls back with the change it describes."""

from __future__ import annotations

from typing import Any

from django.db import models

from console.actors import Actor, actor_label, actor_user
from console.governance.actions import GovernanceAction
from console.governance.models import GovernanceEvent
from console.request_id import current_request_id

SUMMARY_MAX_CHARS = 500


def governance_action(action: GovernanceAction | str) -> GovernanceAction:
    """The catalogue member for `action`; ValueError for anything outside the catalogue."""
    try:
        return GovernanceAction(action)
    except ValueError:
        raise ValueError(
            f"{action!r} is not a governance action: add it to "
            "console.governance.actions.GovernanceAction"
        ) from None


def governance_event_record(
    *,
    actor: Actor | None,
    action: GovernanceAction | str,
    summary: str,
    agent: models.Model | None = None,
    target: models.Model | None = None,
    before: Any = None,
    after: Any = None,
    changes: dict[str, Any] | None = None,
) -> GovernanceEvent:
    """Write one event. `agent` is the agents.Agent the change concerns (if any), `target`
    the changed object; `actor` None is the system; `changes` the field-by-field change of
    a configuration (`GovernanceEvent.changes`), never a secret. Refuses an action outside
    the catalogue (ValueError) before writing anything."""
    checked = governance_action(action)
    return GovernanceEvent.objects.create(
        action=checked.value,
        actor=actor_user(actor),
        actor_label=actor_label(actor),
        agent_id=agent.pk if agent is not None else None,
        agent_slug=getattr(agent, "slug", "") or "",
        object_type=type(target).__name__ if target is not None else "",
        object_id=str(getattr(target, "pk", "") or ""),
        summary=summary[:SUMMARY_MAX_CHARS],
        before=before,
        after=after,
        changes=changes,
        request_id=current_request_id(),
    )
