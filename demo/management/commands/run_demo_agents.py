"""`manage.py run_demo_agents`: the demo agent processes of `make run`, until stopped.

The agent itself (agent-level hooks: audit, completion marker, approvals) and its seed custom
agent (whose PostToolUse hook blocks rm -rf / sudo / chmod 777), each a `run_demo_agent`
process. `run_console --demo` starts this command beside the server and stops it with it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from demo.agents import CUSTOM_AGENT

# The extra arguments of each `run_demo_agent` process.
DEMO_PROCESSES: tuple[tuple[str, ...], ...] = (
    (),
    ("--custom-agent", CUSTOM_AGENT, "--pace", "7"),
)


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


class Command(BaseCommand):
    help = "Run the demo agents of `make run` against the console until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--console", default="http://127.0.0.1:8000")

    def handle(self, *args: Any, console: str, **options: Any) -> None:
        signal.signal(signal.SIGTERM, _stop)
        processes = [
            subprocess.Popen(
                [sys.executable, "manage.py", "run_demo_agent", "--console", console, *extra]
            )
            for extra in DEMO_PROCESSES
        ]
        try:
            for process in processes:
                process.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=10)
