"""Prepare the database of DATABASE_URL for a scale-out test run in another process: migrate,
then create the agent `sre-agent` (a token, a PreToolUse approval hook for restart_service),
the reviewer `rita` and the auditor `audrey` (each a personal API token; audrey also the
password given). Prints one JSON line with the tokens.

    DATABASE_URL=... python tests/e2e/provision_scaleout.py --password PASSWORD
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from agents import services as agent_services  # noqa: E402
from console import services as console_services  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--password", required=True)
    options = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    agent = agent_services.agent_create(actor=None, slug="sre-agent")
    agent_token = agent_services.agent_token_issue(actor=None, agent=agent, name="scaleout")
    agent_services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=None,
        event="PreToolUse",
        raw={"type": "approval", "matcher": "restart_service", "expiresIn": 600},
    )
    tokens = {"agent": agent_token.plaintext}
    for username, role in (("rita", "reviewer"), ("audrey", "auditor")):
        password = options.password if role == "auditor" else None
        user = console_services.user_set_role(
            actor=None, username=username, role=role, password=password
        )
        tokens[role] = console_services.api_token_issue(
            actor=None, user=user, name="scaleout"
        ).plaintext
    print(json.dumps(tokens))


if __name__ == "__main__":
    main()
