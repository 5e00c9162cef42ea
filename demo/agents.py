"""The demo agents' configuration, shared by `seed_demo` and `seed_audit_demo`."""

from __future__ import annotations

import yaml

from agents import services as agent_services
from agents.models import Agent, CustomAgent, Hook
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    DEMO_APPROVAL_HOOK,
    SEED_CUSTOM_AGENT_YAML,
)

DEMO_AGENT = "sre-agent"  # the agent of `make run`
CUSTOM_AGENT = "my_hooked_agent"  # its seed custom agent


def demo_agent_ensure(slug: str, *, display_name: str, description: str = "") -> Agent:
    """Agent `slug` with the demo hooks: at agent level audit-all-tools, the completion
    marker and the approval hook; the seed custom agent `my_hooked_agent`. Created when
    missing; hooks an admin already has are left as they are."""
    agent = Agent.objects.filter(slug=slug).first()
    if agent is None:
        agent = agent_services.agent_create(
            actor=None, slug=slug, display_name=display_name, description=description
        )
    if not Hook.objects.filter(agent=agent, custom_agent=None).exists():
        hooks = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]
        hooks.update(yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"])
        hooks["PreToolUse"] = [DEMO_APPROVAL_HOOK]
        agent_services.agent_hooks_replace(actor=None, agent=agent, document={"hooks": hooks})
    if not CustomAgent.objects.filter(agent=agent, name=CUSTOM_AGENT).exists():
        agent_services.custom_agent_put(
            actor=None,
            agent=agent,
            name=CUSTOM_AGENT,
            document=yaml.safe_load(SEED_CUSTOM_AGENT_YAML),
        )
    return agent
