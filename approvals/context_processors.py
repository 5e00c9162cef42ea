"""The approvals counter in every page's navigation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from approvals.selectors import pending_counter
from console.roles import is_reviewer


def approvals_nav(request: HttpRequest) -> dict[str, Any]:
    """Escalations waiting for this reviewer, and when the soonest expire (one query)."""
    user = getattr(request, "user", None)
    if user is None or not is_reviewer(user):
        return {}
    counter = pending_counter(user)
    return {"nav_pending_count": counter.count or None, "nav_pending_counter": counter}
