"""Which hooks apply to a tool call: the enforced hooks of an event whose matcher matches.

Read on every escalation (approvals.rules), so the queries are compiled once
(console.prepared).
"""

from __future__ import annotations

from django.db.models import CharField, IntegerField, Q, QuerySet

from agents.models import Agent, CustomAgent, Event, Hook, HookMode
from console.prepared import PreparedQuery

# The agent side's own matcher (anchored, case-sensitive, `*` all, empty nothing):
# the console decides which hooks apply with exactly the code that runs them.
from console_client.context_mapping import matcher_matches


def hook_matches_tool(hook: Hook, tool_name: str) -> bool:
    return matcher_matches(hook.definition.get("matcher"), tool_name)


def _enforced(scopes: Q, agent_id: int, event: str) -> QuerySet[Hook]:
    return Hook.objects.filter(
        scopes, agent_id=agent_id, event=event, enabled=True, mode=HookMode.ENFORCE
    )


# The enforced hooks of an event at the agent level, and with a custom agent's on top.
_enforced_agent_level = PreparedQuery(
    Hook,
    lambda agent_id, event: _enforced(Q(custom_agent=None), agent_id, event),
    agent_id=IntegerField(),
    event=CharField(),
)
_enforced_in_custom_agent = PreparedQuery(
    Hook,
    lambda agent_id, custom_agent_id, event: _enforced(
        Q(custom_agent=None) | Q(custom_agent_id=custom_agent_id), agent_id, event
    ),
    agent_id=IntegerField(),
    custom_agent_id=IntegerField(),
    event=CharField(),
)


def hooks_matching_tool(
    agent: Agent, custom_agent: CustomAgent | None, tool_name: str, *, event: str
) -> list[Hook]:
    """Enabled, enforced `event` hooks of the effective configuration whose matcher matches
    `tool_name`, in enforcement order (agent level first, then the custom agent's; each by
    position). Shadow hooks are left out: they never block or escalate."""
    if custom_agent is None:
        rows = _enforced_agent_level(agent_id=agent.pk, event=event)
    else:
        rows = _enforced_in_custom_agent(
            agent_id=agent.pk, custom_agent_id=custom_agent.pk, event=event
        )
    ordered = sorted(
        rows, key=lambda hook: (hook.custom_agent_id is not None, hook.position, hook.pk)
    )
    return [hook for hook in ordered if hook_matches_tool(hook, tool_name)]


def approval_hooks_matching(
    agent: Agent, custom_agent: CustomAgent | None, tool_name: str
) -> list[Hook]:
    """The approval hooks that apply to a call of `tool_name` (PreToolUse, enabled, matching)."""
    return [
        hook
        for hook in hooks_matching_tool(agent, custom_agent, tool_name, event=Event.PRE_TOOL_USE)
        if hook.hook_type == "approval"
    ]
