"""`manage.py bootstrap_agent <slug>`: create the agent if missing; print a new token last."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import services
from agents.models import Agent
from console.errors import InvalidInput


class Command(BaseCommand):
    help = "Create the agent if missing and print a new agent token as the last line of stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--token-name", default="bootstrap")

    def handle(self, *args: Any, slug: str, token_name: str, **options: Any) -> None:
        agent = Agent.objects.filter(slug=slug).first()
        if agent is None:
            try:
                agent = services.agent_create(actor=None, slug=slug)
            except InvalidInput as exc:
                raise CommandError("; ".join(m for ms in exc.fields.values() for m in ms)) from None
            self.stdout.write(f"Created agent {slug}.")
        issued = services.agent_token_issue(actor=None, agent=agent, name=token_name)
        self.stdout.write(f"Issued token {issued.token.prefix}… for {slug} (shown once):")
        self.stdout.write(issued.plaintext)
