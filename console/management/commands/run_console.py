"""`manage.py run_console`: serve the console (ASGI: HTTP + websockets) on the embedded default."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Serve the console at http://127.0.0.1:8000 with in-process periodic tasks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000")

    def handle(self, *args: Any, addr: str, **options: Any) -> None:
        call_command("runserver", addr, use_reloader=False)
