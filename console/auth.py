"""API authentication and permissions.

`Authorization: Bearer agt_…` authenticates an agent (request.user is an AgentPrincipal
bound to exactly one agent); `Bearer pat_…` authenticates a person with their role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from console.roles import is_admin, is_auditor, is_reviewer
from console.tokens import AGENT_TOKEN_KIND, PERSONAL_TOKEN_KIND, PREFIX_LENGTH, token_matches

if TYPE_CHECKING:
    from agents.models import Agent, AgentToken

# last_used_at is a hint, not a log: write it at most once a minute per token.
LAST_USED_RESOLUTION = timedelta(seconds=60)


@dataclass(eq=False)
class AgentPrincipal:
    """The authenticated caller of an agent-token request."""

    agent: Agent
    token: AgentToken
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_agent: bool = True
    is_active: bool = True
    is_superuser: bool = False
    is_staff: bool = False
    pk: None = None
    id: None = None
    _extra: dict[str, Any] = field(default_factory=dict)

    @property
    def username(self) -> str:
        return f"agent:{self.agent.slug}"

    def __str__(self) -> str:
        return self.username


def actor_label(actor: Any) -> str:
    """How an actor is named in revisions and governance events."""
    if actor is None:
        return "system"
    if getattr(actor, "is_agent", False):
        return str(actor.username)
    return str(getattr(actor, "username", None) or actor)


def actor_user(actor: Any) -> Any:
    """The Django user behind an actor, or None for agents and the system."""
    if actor is None or getattr(actor, "is_agent", False):
        return None
    return actor


def _touch(model_cls: Any, token: Any) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        model_cls.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


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
        from agents.models import AgentToken
        from console.models import ApiToken

        kind = plaintext.split("_", 1)[0]
        prefix = plaintext[:PREFIX_LENGTH]
        if kind == AGENT_TOKEN_KIND:
            agent_token = (
                AgentToken.objects.select_related("agent")
                .filter(prefix=prefix, revoked_at__isnull=True)
                .first()
            )
            if agent_token is not None and token_matches(plaintext, agent_token.digest):
                _touch(AgentToken, agent_token)
                return AgentPrincipal(agent=agent_token.agent, token=agent_token), agent_token
        elif kind == PERSONAL_TOKEN_KIND:
            api_token = (
                ApiToken.objects.select_related("user")
                .filter(prefix=prefix, revoked_at__isnull=True, user__is_active=True)
                .first()
            )
            if api_token is not None and token_matches(plaintext, api_token.digest):
                _touch(ApiToken, api_token)
                return api_token.user, api_token
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


def is_agent(user: Any) -> bool:
    return bool(getattr(user, "is_agent", False))


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
