"""`manage.py run_demo_agent`: the demo SRE agent (examples/demo_agent.py) against a console.

Issues a fresh agent token for the demo agent (creating the agent if it is missing), then
runs the demo loop in this process until it is stopped. `make run` starts it in the
background through `run_console --demo`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from agents import services as agent_services
from agents.models import Agent
from demo.agents import DEMO_AGENT

DEMO_FILE = Path(settings.BASE_DIR) / "examples" / "demo_agent.py"


def load_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_agent", DEMO_FILE)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {DEMO_FILE}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Command(BaseCommand):
    help = "Run the demo agent (scripted model, simulated tools) against the console."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--console", default="http://127.0.0.1:8000")
        parser.add_argument("--agent", default=DEMO_AGENT)
        parser.add_argument("--custom-agent", default="")
        parser.add_argument("--pace", type=float, default=4.0, help="Seconds between tasks.")
        parser.add_argument("--runs", type=int, default=0, help="Tasks per loop; 0 = forever.")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["agent"]
        agent = Agent.objects.filter(slug=slug).first()
        if agent is None:
            agent = agent_services.agent_create(actor=None, slug=slug)
        issued = agent_services.agent_token_issue(
            actor=None, agent=agent, name="demo agent process"
        )
        logging.basicConfig(level=logging.INFO, format="%(asctime)s demo-agent %(message)s")
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("agent_framework").setLevel(logging.WARNING)
        self.stdout.write(f"Demo agent {slug} → {options['console']} (Ctrl-C to stop)")
        demo = load_demo()
        try:
            asyncio.run(
                demo.demo(
                    options["console"],
                    issued.plaintext,
                    custom_agent=options["custom_agent"] or None,
                    pace=options["pace"],
                    runs=options["runs"],
                )
            )
        except KeyboardInterrupt:
            pass
