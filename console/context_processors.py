"""Navigation facts every page's layout needs."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from console.roles import is_admin, is_auditor, is_reviewer, primary_role


def console_nav(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    section = request.path.strip("/").split("/", 1)[0]
    can_review = is_reviewer(user)
    counter = _pending_counter(user) if can_review else None
    return {
        "nav_section": section,
        "nav_role": primary_role(user),
        "nav_can_admin": is_admin(user),
        "nav_can_review": can_review,
        "nav_can_audit": is_auditor(user),
        "nav_pending_count": (counter.count or None) if counter else None,
        "nav_pending_counter": counter,
    }


def _pending_counter(user: Any) -> Any:
    """Escalations waiting for this reviewer, and when the soonest expire (one query)."""
    from approvals.selectors import pending_counter

    return pending_counter(user)
