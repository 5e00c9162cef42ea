"""Who acts on the console: a person (a Django user), an agent through its token, or the
system (`None`: periodic sweeps, seeding). Every service takes one of these as `actor`.

`AgentPrincipal` is what an agent-token request carries as `request.user`; the agents app
builds it (agents.auth) and the kernel knows only its shape, so it never imports agents.
`is_agent` is the one way to ask whether an actor is an agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request

if TYPE_CHECKING:
    from typing_extensions import TypeIs


@dataclass(eq=False)
class AgentPrincipal:
    """The authenticated caller of an agent-token request: bound to exactly one agent.

    `agent` is an `agents.models.Agent` and `token` the `agents.models.AgentToken` it used
    (typed loosely here because the kernel does not import the agents app;
    `agents.auth.principal_agent` gives the typed agent)."""

    agent: Any
    token: Any
    is_authenticated: Literal[True] = True
    is_anonymous: Literal[False] = False
    is_agent: Literal[True] = True
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


Actor = User | AgentPrincipal


def is_agent(actor: object) -> TypeIs[AgentPrincipal]:
    """Whether `actor` (an actor, `request.user`, anything) is an agent acting by its token."""
    return isinstance(actor, AgentPrincipal)


def actor_label(actor: Actor | None) -> str:
    """How an actor is named in revisions and governance events."""
    if actor is None:
        return "system"
    return str(actor.username or actor)


def actor_user(actor: Actor | None) -> User | None:
    """The Django user behind an actor, or None for agents and the system."""
    if actor is None or is_agent(actor):
        return None
    return actor


def request_actor(request: HttpRequest | Request) -> Actor:
    """The actor of a request that passed its login or permission gate (a person or an
    agent); an anonymous request never reaches a service through here."""
    user = request.user
    if is_agent(user) or (isinstance(user, User) and user.is_authenticated):
        return user
    raise PermissionDenied("Sign in first.")
