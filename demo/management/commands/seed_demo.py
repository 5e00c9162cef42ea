"""`manage.py seed_demo`: demo users and an SRE agent holding the source documents' hooks.

Idempotent: running it again resets the demo users' passwords and leaves existing hooks.
"""

from __future__ import annotations

from typing import Any

import yaml
from django.core.management.base import BaseCommand

from agents import services as agent_services
from agents.models import Agent, CustomAgent, Hook
from console import services as console_services
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    DEMO_APPROVAL_HOOK,
    SEED_CUSTOM_AGENT_YAML,
)

DEMO_AGENT = "sre-agent"
DEMO_USERS = (("admin", "admin"), ("reviewer", "reviewer"), ("auditor", "auditor"))


class Command(BaseCommand):
    help = "Seed demo users (admin/reviewer/auditor) and the demo SRE agent with the seed hooks."

    def handle(self, *args: Any, **options: Any) -> None:
        for username, role in DEMO_USERS:
            console_services.user_set_role(
                actor=None, username=username, role=role, password=username
            )
        agent = Agent.objects.filter(slug=DEMO_AGENT).first()
        if agent is None:
            agent = agent_services.agent_create(
                actor=None,
                slug=DEMO_AGENT,
                display_name="SRE agent (demo)",
                description="Demo agent: runs shell and service tools under the source documents' hooks.",
            )
        if not Hook.objects.filter(agent=agent, custom_agent=None).exists():
            hooks = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]
            hooks.update(yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"])
            hooks["PreToolUse"] = [DEMO_APPROVAL_HOOK]
            agent_services.agent_hooks_replace(actor=None, agent=agent, document={"hooks": hooks})
        if not CustomAgent.objects.filter(agent=agent, name="my_hooked_agent").exists():
            agent_services.custom_agent_put(
                actor=None,
                agent=agent,
                name="my_hooked_agent",
                document=yaml.safe_load(SEED_CUSTOM_AGENT_YAML),
            )
        self.stdout.write(self.style.SUCCESS("Demo ready."))
        self.stdout.write("  Log in at http://127.0.0.1:8000/accounts/login/ as one of:")
        for username, role in DEMO_USERS:
            self.stdout.write(f"    {username:<9} password {username:<9} ({role})")
