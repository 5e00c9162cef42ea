"""`manage.py seed_demo`: demo users and an SRE agent holding the source documents' hooks.

Idempotent: running it again resets the demo users' passwords and leaves existing hooks.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from console import services as console_services
from demo.agents import DEMO_AGENT, demo_agent_ensure

DEMO_USERS = (("admin", "admin"), ("reviewer", "reviewer"), ("auditor", "auditor"))


class Command(BaseCommand):
    help = "Seed demo users (admin/reviewer/auditor) and the demo SRE agent with the seed hooks."

    def handle(self, *args: Any, **options: Any) -> None:
        for username, role in DEMO_USERS:
            console_services.user_set_role(
                actor=None, username=username, role=role, password=username
            )
        demo_agent_ensure(
            DEMO_AGENT,
            display_name="SRE agent (demo)",
            description="Demo agent: runs shell and service tools under the source documents' hooks.",
        )
        self.stdout.write(self.style.SUCCESS("Demo ready."))
        self.stdout.write("  Log in at http://127.0.0.1:8000/accounts/login/ as one of:")
        for username, role in DEMO_USERS:
            self.stdout.write(f"    {username:<9} password {username:<9} ({role})")
