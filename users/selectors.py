"""Reads of the user pages: the user list with roles, scopes and token counts, and the
lookups behind every page (admins only; anything else is 404)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.paginator import Page
from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404

from agents.selectors import agents_visible_to, page_of
from approvals.selectors import reviewer_scopes
from console.models import ApiToken
from console.roles import Role, is_admin


def _role_groups() -> Prefetch[Any]:
    return Prefetch("groups", to_attr="role_groups")


@dataclass(frozen=True)
class UserRow:
    user: User
    roles: list[str]
    agents: list[str]  # the reviewer scope; empty: every agent
    active_tokens: int


def _roles(user: Any) -> list[str]:
    names = {group.name for group in user.role_groups}
    return [role for role in Role.values if role in names]


def user_rows(viewer: Any, page: Any) -> tuple[Page[Any], list[UserRow]]:
    """One page of users (active first, then by name) with what the list shows."""
    if not is_admin(viewer):
        return page_of(User.objects.none(), 1), []
    users = (
        User.objects.order_by("-is_active", "username")
        .prefetch_related(_role_groups())
        .annotate(active_tokens=Count("api_tokens", filter=Q(api_tokens__revoked_at=None)))
    )
    found = page_of(users, page)
    people = list(found.object_list)
    scopes = reviewer_scopes([user.pk for user in people])
    rows = [
        UserRow(user, _roles(user), scopes.get(user.pk, []), user.active_tokens) for user in people
    ]
    return found, rows


def get_user_for_admin(viewer: Any, pk: int) -> UserRow:
    """User `pk` as an admin sees it; 404 for anyone else and for an unknown id."""
    if not is_admin(viewer):
        raise Http404("No such user.")
    user = User.objects.prefetch_related(_role_groups()).filter(pk=pk).first()
    if user is None:
        raise Http404("No such user.")
    active = ApiToken.objects.filter(user=user, revoked_at=None).count()
    return UserRow(user, _roles(user), reviewer_scopes([user.pk]).get(user.pk, []), active)


def scope_choices(viewer: Any) -> list[str]:
    """The agents a reviewer can be limited to."""
    return list(agents_visible_to(viewer).order_by("slug").values_list("slug", flat=True))


def personal_tokens(user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at", "-id")


def get_personal_token(user: User, pk: int) -> ApiToken:
    token = ApiToken.objects.select_related("user").filter(user=user, pk=pk).first()
    if token is None:
        raise Http404("No such token.")
    return token
