"""`manage.py run_console`: serve the console (ASGI: HTTP + websockets).

On the embedded default (no REDIS_URL) periodic tasks run in-process (console.scheduler);
with `--demo` the demo agents (`manage.py run_demo_agents`, demo/) produce live traffic
through console_client.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from console import embedded
from console.scheduler import EmbeddedBeat


class Command(BaseCommand):
    help = "Serve the console at http://127.0.0.1:8000 (optionally with the demo agent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000")
        parser.add_argument("--demo", action="store_true", help="Also run the demo agent process.")

    def handle(self, *args: Any, addr: str, demo: bool, **options: Any) -> None:
        beat = None
        if embedded.beat_in_process():
            beat = EmbeddedBeat(getattr(settings, "CELERY_BEAT_SCHEDULE", {}))
            beat.start()
        demo_agents = None
        if demo:  # the demo app's command (demo/), by name: the kernel imports no app
            demo_agents = subprocess.Popen(
                [sys.executable, "manage.py", "run_demo_agents", "--console", f"http://{addr}"]
            )
        try:
            call_command("runserver", addr, use_reloader=False)
        finally:
            if demo_agents is not None:
                demo_agents.terminate()
                demo_agents.wait(timeout=15)
            if beat is not None:
                beat.stop()
