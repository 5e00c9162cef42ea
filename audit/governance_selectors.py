"""Reads of the governance log (console.governance's GovernanceEvent) for the audit pages, the
API and the governance export: who may read it, its filters and paging. The filter grammar
(instants, keyset cursors, errors naming the field) is the record search's, audit.selectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from audit.selectors import (
    DEFAULT_PAGE_SIZE,
    GOVERNANCE_FILTERS,
    MAX_FILTER_LENGTH,
    Page,
    clean_filters,
    filter_error,
    keyset_page,
    parse_instant,
)
from console.governance.models import GovernanceEvent
from console.roles import is_auditor


def governance_events_visible_to(user: Any) -> QuerySet[GovernanceEvent]:
    """Governance events are read by auditors and admins only."""
    if is_auditor(user):
        return GovernanceEvent.objects.all()
    return GovernanceEvent.objects.none()


def governance_events_filter(params: Mapping[str, Any], *, user: Any) -> QuerySet[GovernanceEvent]:
    """Governance events matching `params`, newest first (-at, -id; page them with
    `governance_events_page`). Filters: action (exact, or a prefix ending in '.' such as
    `records.`), actor (actor label, exact), agent (slug), q (summary text), since, until.
    Raises InvalidInput naming a bad value."""
    filters = clean_filters(params, GOVERNANCE_FILTERS)
    qs = governance_events_visible_to(user)
    for name, value in filters.items():
        if len(value) > MAX_FILTER_LENGTH:
            raise filter_error(name, f"longer than {MAX_FILTER_LENGTH} characters.")
    if "action" in filters:
        action = filters["action"]
        qs = (
            qs.filter(action__startswith=action)
            if action.endswith(".")
            else qs.filter(action=action)
        )
    if "actor" in filters:
        qs = qs.filter(actor_label=filters["actor"])
    if "agent" in filters:
        qs = qs.filter(agent_slug=filters["agent"])
    if "q" in filters:
        qs = qs.filter(summary__icontains=filters["q"])
    since = parse_instant("since", filters["since"]) if "since" in filters else None
    until = parse_instant("until", filters["until"]) if "until" in filters else None
    if since is not None:
        qs = qs.filter(at__gte=since)
    if until is not None:
        qs = qs.filter(at__lt=until)
    return qs.order_by("-at", "-id")


def governance_actions() -> list[str]:
    """The distinct actions of the governance log, in order (the action filter's options)."""
    actions = GovernanceEvent.objects.order_by("action").values_list("action", flat=True)
    return list(actions.distinct())


def governance_actor_labels(limit: int = 200) -> list[str]:
    """Up to `limit` distinct actor labels, in order (the actor filter's suggestions)."""
    labels = GovernanceEvent.objects.order_by("actor_label").values_list("actor_label", flat=True)
    return list(labels.distinct()[:limit])


def governance_events_page(
    qs: QuerySet[GovernanceEvent], cursor: str | None, limit: int = DEFAULT_PAGE_SIZE
) -> Page[GovernanceEvent]:
    return keyset_page(qs, cursor, limit, time_field="at")
