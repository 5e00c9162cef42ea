"""Navigation facts every page's layout needs. Each app adds its own counters through its
context processor (e.g. approvals.context_processors.approvals_nav)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from console.roles import is_admin, is_auditor, is_reviewer, primary_role


def console_nav(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    section = request.path.strip("/").split("/", 1)[0]
    return {
        "nav_section": section,
        "nav_role": primary_role(user),
        "nav_can_admin": is_admin(user),
        "nav_can_review": is_reviewer(user),
        "nav_can_audit": is_auditor(user),
    }
