"""`manage.py bootstrap_user <username> --role admin|reviewer|auditor [--password P]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console import services
from console.roles import Role


class Command(BaseCommand):
    help = "Create or update a user in a role and print a new personal API token as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--password", default=None)

    def handle(
        self, *args: Any, username: str, role: str, password: str | None, **options: Any
    ) -> None:
        user = services.user_set_role(actor=None, username=username, role=role, password=password)
        issued = services.api_token_issue(actor=None, user=user, name="bootstrap")
        self.stdout.write(f"User {username} has role {role}. API token (shown once):")
        self.stdout.write(issued.plaintext)
