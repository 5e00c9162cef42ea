"""A live console serving the declaration of an agent with hooks of every kind, and the
console_client host that loads it.

The agent and its token are made through the console's services; its hooks are configured
through the console's own API with the agent token (agent-level hooks of every type, and
the source documents' custom agent `my_hooked_agent`); `ConsoleHooks` then reads the
declaration from `GET /api/v1/declaration?custom_agent=my_hooked_agent` as any agent
process does. One host runs every vector of the module, one session each, on the module's
event loop (its record sink delivers in the background). What the module wrote (the agent,
its configuration, the records the host shipped) is flushed afterwards, as
`transactional_db` does after a test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from django.core.management import call_command
from django.db import connections

from agents import services
from agents.models import Agent
from demo.documents import SEED_CUSTOM_AGENT_YAML
from tests.conformance.harness import VectorHooks
from tests.e2e import live
from tests.e2e.live import LiveConsole

live_console = live.live_console

CUSTOM_AGENT = "my_hooked_agent"
# Agent-level hooks of every console kind, so the served declaration has a binding of each.
AGENT_HOOKS: dict[str, list[dict[str, Any]]] = {
    "Stop": [{"type": "command", "command": "exit 0", "timeout": 10}],
    "PostToolUse": [{"type": "command", "matcher": "*", "command": "exit 0"}],
    "PreToolUse": [
        {"type": "approval", "matcher": "Bash", "expiresIn": 900, "approvalsRequired": 2},
        {"type": "prompt", "matcher": "Bash", "prompt": "Is this call safe? $ARGUMENTS"},
    ],
}


@dataclass(frozen=True)
class GovernedAgent:
    agent: Agent
    token: str
    console: LiveConsole
    root: Path


@pytest.fixture(scope="module")
def governed_agent(
    live_console: LiveConsole,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GovernedAgent]:
    with django_db_blocker.unblock():
        try:
            agent = services.agent_create(actor=None, slug="ctk-agent")
            token = services.agent_token_issue(actor=None, agent=agent, name="ctk").plaintext
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=live_console.url, headers=headers, timeout=10) as http:
                http.put("/api/v1/agent/hooks", json={"hooks": AGENT_HOOKS}).raise_for_status()
                http.put(
                    f"/api/v2/extendedAgent/agents/{CUSTOM_AGENT}",
                    content=SEED_CUSTOM_AGENT_YAML,
                    headers={"Content-Type": "application/yaml"},
                ).raise_for_status()
            yield GovernedAgent(
                agent=agent,
                token=token,
                console=live_console,
                root=tmp_path_factory.mktemp("ctk"),
            )
        finally:
            call_command("flush", verbosity=0, interactive=False)
            connections.close_all()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def console_hooks(governed_agent: GovernedAgent) -> AsyncIterator[VectorHooks]:
    root = governed_agent.root
    hooks = VectorHooks(
        governed_agent.console.url,
        governed_agent.token,
        CUSTOM_AGENT,
        cache_dir=root / "cache",
        spool_dir=root / "spool",
        transcript_dir=root / "transcripts",
        long_poll_seconds=2,
    )
    try:
        yield hooks
    finally:
        await hooks.aclose()
