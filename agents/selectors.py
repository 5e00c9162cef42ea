"""Reads of the agents app: scoped querysets, access helpers and document projections."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from agents.models import Agent, ConfigRevision, CustomAgent, Hook
from agents.validation import custom_agent_document, hooks_document
from console.roles import is_admin, is_auditor, is_reviewer


def agents_visible_to(user: Any) -> QuerySet[Agent]:
    """Agents a person may see: admins, auditors and reviewers see all; agents see themselves."""
    if getattr(user, "is_agent", False):
        return Agent.objects.filter(pk=user.agent.pk)
    if is_admin(user) or is_auditor(user) or is_reviewer(user):
        return Agent.objects.all()
    return Agent.objects.none()


def get_agent_for_user(user: Any, slug: str, *, write: bool = False) -> Agent:
    """The agent `slug` if `user` may read it (and, with write=True, change it); else 404."""
    if write and not (
        is_admin(user) or (getattr(user, "is_agent", False) and user.agent.slug == slug)
    ):
        raise Http404("No such agent.")
    agent = agents_visible_to(user).filter(slug=slug).first()
    if agent is None:
        raise Http404("No such agent.")
    return agent


def get_custom_agent(agent: Agent, name: str) -> CustomAgent:
    custom_agent = CustomAgent.objects.filter(agent=agent, name=name).first()
    if custom_agent is None:
        raise Http404("No such custom agent.")
    return custom_agent


def get_hook_for_user(user: Any, key: str) -> Hook:
    """Hooks are edited by admins only."""
    hook = Hook.objects.select_related("agent", "custom_agent").filter(key=key).first()
    if hook is None or not is_admin(user):
        raise Http404("No such hook.")
    return hook


def hook_rows(agent: Agent, custom_agent: CustomAgent | None) -> list[Hook]:
    return list(
        Hook.objects.filter(agent=agent, custom_agent=custom_agent).order_by(
            "event", "position", "id"
        )
    )


def _as_tuples(hooks: list[Hook]) -> list[tuple[str, dict[str, Any], bool]]:
    return [(hook.event, hook.definition, hook.enabled) for hook in hooks]


def agent_level_hooks(agent: Agent) -> dict[str, list[dict[str, Any]]]:
    return hooks_document(_as_tuples(hook_rows(agent, None)))


def custom_agent_hooks(custom_agent: CustomAgent) -> dict[str, list[dict[str, Any]]]:
    return hooks_document(_as_tuples(hook_rows(custom_agent.agent, custom_agent)))


def custom_agent_as_document(custom_agent: CustomAgent) -> dict[str, Any]:
    return custom_agent_document(
        name=custom_agent.name,
        instructions=custom_agent.instructions,
        handoff_description=custom_agent.handoff_description,
        enable_vanilla_mode=custom_agent.enable_vanilla_mode,
        hooks=_as_tuples(hook_rows(custom_agent.agent, custom_agent)),
    )


def scope_snapshot(agent: Agent, custom_agent_name: str | None) -> dict[str, Any]:
    """What a revision stores: the agent level (mode + hooks) or a custom agent's document."""
    if custom_agent_name is None:
        return {"mode": agent.mode, "hooks": agent_level_hooks(agent)}
    return custom_agent_as_document(get_custom_agent(agent, custom_agent_name))


def revisions_for_scope(agent: Agent, custom_agent_name: str = "") -> QuerySet[ConfigRevision]:
    scope = ConfigRevision.Scope.CUSTOM_AGENT if custom_agent_name else ConfigRevision.Scope.AGENT
    return ConfigRevision.objects.filter(
        agent=agent, scope=scope, custom_agent_name=custom_agent_name
    )


def revision_previous(revision: ConfigRevision) -> ConfigRevision | None:
    return (
        revisions_for_scope(revision.agent, revision.custom_agent_name)
        .filter(number__lt=revision.number)
        .order_by("-number")
        .first()
    )
