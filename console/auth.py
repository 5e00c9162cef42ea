"""API authentication and permissions.

`Authorization: Bearer <kind>_…` is resolved by the token resolvers named in
settings.CONSOLE_TOKEN_RESOLVERS, in order: `agt_…` by the agents app (agents.auth: the
request's user is an `AgentPrincipal` bound to exactly one agent), `pat_…` here (a person
with their role). The kernel never imports the apps that own a kind of token.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.module_loading import import_string
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from console.actors import is_agent
from console.models import ApiToken
from console.prepared import PreparedQuery
from console.roles import group_names_subquery, groups_known, is_admin, is_auditor, is_reviewer
from console.tokens import PERSONAL_TOKEN_KIND, PREFIX_LENGTH, token_matches

# last_used_at is a hint, not a log: write it at most once a minute per token.
LAST_USED_RESOLUTION = timedelta(seconds=60)

# A resolver takes a bearer token's plaintext; it answers (user, token row) when the token is
# of its kind and valid, else None.
TokenResolver = Callable[[str], tuple[Any, Any] | None]


def token_kind(plaintext: str) -> str:
    return plaintext.split("_", 1)[0]


def token_touch(model_cls: type[models.Model], token: Any) -> None:
    """Note that `token` (a row of `model_cls` with `last_used_at`) was just used."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        model_cls._default_manager.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def _personal_token(prefix: str) -> models.QuerySet[ApiToken]:
    rows = ApiToken.objects.select_related("user").filter(
        prefix=prefix, revoked_at__isnull=True, user__is_active=True
    )
    # The user's roles in the same query: no second one for the role checks.
    return rows.annotate(user_group_names=group_names_subquery("user_id"))[:1]


_personal_by_prefix = PreparedQuery(ApiToken, _personal_token, prefix=models.CharField())


def personal_token_resolve(plaintext: str) -> tuple[Any, ApiToken] | None:
    """`pat_…`: the token's (active) user, with the rights of their role."""
    if token_kind(plaintext) != PERSONAL_TOKEN_KIND:
        return None
    api_token: Any = _personal_by_prefix.first(prefix=plaintext[:PREFIX_LENGTH])
    if api_token is None or not token_matches(plaintext, api_token.digest):
        return None
    token_touch(ApiToken, api_token)
    groups_known(api_token.user, api_token.user_group_names)
    return api_token.user, api_token


def _resolvers() -> list[TokenResolver]:
    return [import_string(path) for path in settings.CONSOLE_TOKEN_RESOLVERS]


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if parts[0] != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: use 'Bearer <token>'."
            )
        return self.authenticate_token(parts[1])

    @staticmethod
    def authenticate_token(plaintext: str) -> tuple[Any, Any]:
        for resolve in _resolvers():
            found = resolve(plaintext)
            if found is not None:
                return found
        raise exceptions.AuthenticationFailed("Invalid or revoked token.")

    def authenticate_header(self, request: Any) -> str:
        return self.keyword


class BearerTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Describes the bearer tokens in the OpenAPI document."""

    target_class = BearerTokenAuthentication
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent token (agt_…) or a personal API token (pat_…).",
        }


class IsAgent(permissions.BasePermission):
    message = "This endpoint takes an agent token."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_agent(request.user)


class IsAdminRole(permissions.BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_admin(request.user)


class IsAgentOrAdmin(permissions.BasePermission):
    message = "This endpoint takes an agent token or an admin."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_agent(request.user) or is_admin(request.user)


class IsReviewer(permissions.BasePermission):
    message = "Only reviewers may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_reviewer(request.user)


class IsAuditor(permissions.BasePermission):
    message = "Only auditors and admins may read this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_auditor(request.user)
