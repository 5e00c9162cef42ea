"""`manage.py run_console`: serve the console (ASGI: HTTP + websockets).

On the embedded default (no REDIS_URL) periodic tasks run in-process (console.scheduler);
with `--demo` a demo agent process produces live traffic through console_client.
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
        demo_processes = []
        if demo:
            # The agent itself (agent-level hooks: audit, completion marker, approvals) and its
            # seed custom agent (whose PostToolUse hook blocks rm -rf / sudo / chmod 777).
            for extra in ([], ["--custom-agent", "my_hooked_agent", "--pace", "7"]):
                demo_processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "manage.py",
                            "run_demo_agent",
                            "--console",
                            f"http://{addr}",
                            *extra,
                        ]
                    )
                )
        try:
            call_command("runserver", addr, use_reloader=False)
        finally:
            for process in demo_processes:
                process.terminate()
            if beat is not None:
                beat.stop()
