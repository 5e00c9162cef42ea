"""Roles are Django groups: admin, reviewer, auditor. Superusers are admins."""

from __future__ import annotations

from typing import Any

from django.db.models import TextChoices

from console.actors import is_agent


class Role(TextChoices):
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"
    AUDITOR = "auditor", "Auditor"


def _group_names(user: Any) -> set[str]:
    cached = getattr(user, "_console_groups", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._console_groups = cached
    return cached


def groups_known(user: Any, names: set[str]) -> None:
    """`user`'s group names as the caller just read them (role checks then ask no query)."""
    user._console_groups = set(names)


def has_role(user: Any, role: Role) -> bool:
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if is_agent(user) or not getattr(user, "is_active", True):
        return False
    if getattr(user, "is_superuser", False):
        return True
    return role.value in _group_names(user)


def is_admin(user: Any) -> bool:
    return has_role(user, Role.ADMIN)


def is_reviewer(user: Any) -> bool:
    return has_role(user, Role.REVIEWER) or is_admin(user)


def is_auditor(user: Any) -> bool:
    return has_role(user, Role.AUDITOR) or is_admin(user)


def primary_role(user: Any) -> str | None:
    for role in (Role.ADMIN, Role.REVIEWER, Role.AUDITOR):
        if has_role(user, role):
            return role.value
    return None
