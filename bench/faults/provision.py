"""Prepare a fault/load database: migrate, then create the agent `faults-agent` with a token,
a reviewer `faults-reviewer` with a personal API token and N logged-in sessions (for
websocket clients), and optionally a PreToolUse approval hook. Prints one JSON line.

    DATABASE_URL=... python bench/faults/provision.py [--sessions N] [--approval-tools REGEX]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY  # noqa: E402
from django.core.management import call_command  # noqa: E402

from agents import services as agent_services  # noqa: E402
from agents.models import Agent  # noqa: E402
from console import services as console_services  # noqa: E402

AGENT = "faults-agent"
REVIEWER = "faults-reviewer"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=0)
    parser.add_argument("--approval-tools", default="")
    options = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    agent = Agent.objects.filter(slug=AGENT).first() or agent_services.agent_create(
        actor=None, slug=AGENT
    )
    token = agent_services.agent_token_issue(actor=None, agent=agent, name="faults")
    if options.approval_tools and not agent.hooks.filter(event="PreToolUse").exists():
        agent_services.hook_create(
            actor=None,
            agent=agent,
            custom_agent=None,
            event="PreToolUse",
            raw={"type": "approval", "matcher": options.approval_tools, "expiresIn": 600},
        )
    reviewer = console_services.user_set_role(actor=None, username=REVIEWER, role="reviewer")
    api_token = console_services.api_token_issue(actor=None, user=reviewer, name="faults")
    store_class = importlib.import_module(settings.SESSION_ENGINE).SessionStore
    sessions = []
    for _ in range(options.sessions):
        store = store_class()
        store[SESSION_KEY] = str(reviewer.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = reviewer.get_session_auth_hash()
        store.create()
        sessions.append(store.session_key)
    print(
        json.dumps(
            {
                "agent": AGENT,
                "agent_token": token.plaintext,
                "reviewer_token": api_token.plaintext,
                "reviewer_sessions": sessions,
            }
        )
    )


if __name__ == "__main__":
    main()
