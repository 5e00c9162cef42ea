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


GROUP_SEPARATOR = "\x1f"


def group_names_subquery(user_field: str = "pk") -> Any:
    """An annotation: the group names of the user whose id is the outer row's `user_field`,
    joined by GROUP_SEPARATOR (NULL for none); hand the value to `groups_known`."""
    from django.contrib.auth.models import User
    from django.db.models import OuterRef, Subquery, Value
    from django.db.models.aggregates import StringAgg

    rows = User.groups.through.objects.filter(user_id=OuterRef(user_field))
    joined = StringAgg("group__name", Value(GROUP_SEPARATOR))
    return Subquery(rows.values("user_id").annotate(names=joined).values("names")[:1])  # type: ignore[misc]


def groups_known(user: Any, joined: str | None) -> None:
    """`user`'s group names as the caller just read them with `group_names_subquery` (role
    checks of this user object then ask no query)."""
    user._console_groups = set(joined.split(GROUP_SEPARATOR)) if joined else set()


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
