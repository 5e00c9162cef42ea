"""Agent-token authentication: `Authorization: Bearer agt_…` names exactly one agent.

`agent_token_resolve` is one of the kernel's bearer-token resolvers
(settings.CONSOLE_TOKEN_RESOLVERS); the request's user is then a `console.actors.AgentPrincipal`
holding the agent and the token it used.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import CharField

from agents.models import Agent, AgentToken
from console.actors import AgentPrincipal, is_agent
from console.auth import token_kind, token_touch
from console.prepared import PreparedQuery
from console.tokens import AGENT_TOKEN_KIND, PREFIX_LENGTH, token_matches

_unrevoked_by_prefix = PreparedQuery(
    AgentToken,
    lambda prefix: AgentToken.objects.select_related("agent").filter(
        prefix=prefix, revoked_at__isnull=True
    )[:1],
    prefix=CharField(),
)


def agent_principal(token: AgentToken) -> AgentPrincipal:
    return AgentPrincipal(agent=token.agent, token=token)


def agent_token_resolve(plaintext: str) -> tuple[AgentPrincipal, AgentToken] | None:
    """`agt_…`: the principal of the token's agent, while the token is not revoked."""
    if token_kind(plaintext) != AGENT_TOKEN_KIND:
        return None
    token = _unrevoked_by_prefix.first(prefix=plaintext[:PREFIX_LENGTH])
    if token is None or not token_matches(plaintext, token.digest):
        return None
    token_touch(AgentToken, token)
    return agent_principal(token), token


def principal_agent(actor: object) -> Agent:
    """The agent an agent-token caller acts for (views behind `IsAgent`)."""
    if not is_agent(actor):
        raise PermissionDenied("This endpoint takes an agent token.")
    agent: Agent = actor.agent
    return agent
