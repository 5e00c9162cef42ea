"""The approvals counter in every page's navigation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from approvals.selectors import pending_count
from console.roles import is_reviewer


def approvals_nav(request: HttpRequest) -> dict[str, Any]:
    """Escalations waiting for this reviewer: one COUNT query; empty when none."""
    user = getattr(request, "user", None)
    if user is None or not is_reviewer(user):
        return {}
    return {"nav_pending_count": pending_count(user) or None}
