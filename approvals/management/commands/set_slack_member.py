"""`manage.py set_slack_member <username> <member-id>`: link a reviewer to their Slack member,
so their clicks on Slack's Approve/Reject buttons act as them ("" unlinks). docs/slack.md."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from approvals import services
from console.errors import DomainError


class Command(BaseCommand):
    help = "Link a console user to a Slack member ID (U…); an empty ID unlinks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("member_id", help='Slack member ID such as U012AB3CD; "" unlinks')

    def handle(self, *args: Any, username: str, member_id: str, **options: Any) -> None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        try:
            identity = services.slack_identity_set(actor=None, user=user, slack_user_id=member_id)
        except DomainError as exc:
            problems = " ".join(m for msgs in exc.fields.values() for m in msgs)
            raise CommandError(f"{exc.message} {problems}") from None
        if identity is None:
            self.stdout.write(f"{username} is not linked to a Slack member.")
        else:
            self.stdout.write(f"{username} is Slack member {identity.slack_user_id}.")
