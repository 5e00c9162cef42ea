"""Fixtures for console_client against a live console: an agent with hooks and a token,
and ConsoleHooks pointed at it with private cache, spool and transcript directories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from agents import services
from agents.models import Agent
from console_client import ConsoleHooks
from tests.e2e import live
from tests.e2e.live import LiveConsole

live_console = live.live_console


@dataclass
class Governed:
    agent: Agent
    token: str
    console: LiveConsole
    root: Path

    def hooks(self, custom_agent: str | None = None, **options: Any) -> ConsoleHooks:
        options.setdefault("cache_dir", self.root / "cache")
        options.setdefault("spool_dir", self.root / "spool")
        options.setdefault("transcript_dir", self.root / "transcripts")
        options.setdefault("long_poll_seconds", 2)
        return ConsoleHooks(self.console.url, self.token, custom_agent, **options)


@pytest.fixture
def governed(
    close_db_after: None,
    transactional_db: None,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[..., Governed]]:
    """`governed(hooks={...}, mode=..., custom={name: hooks})` → an agent the console governs."""
    # The async tests set the console up through the ORM on the loop's thread; nothing else
    # touches the connection concurrently.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    console: LiveConsole = request.getfixturevalue("live_console")
    # On the loop's thread Django's connections are per context: an async test's ORM calls
    # (here and in its body) use a connection of the test's own context, which neither
    # close_db_after (asgiref's sync thread) nor pytest-django sees. Closed at teardown, or
    # it holds a session on the test database (and a slot of the pool) until collected.
    used: list[BaseDatabaseWrapper] = []

    def make(
        hooks: dict[str, list[dict[str, Any]]] | None = None,
        *,
        mode: str = "enforce",
        custom: dict[str, dict[str, list[dict[str, Any]]]] | None = None,
        slug: str = "sre-agent",
    ) -> Governed:
        if (wrapper := connections[DEFAULT_DB_ALIAS]) not in used:
            used.append(wrapper)
        agent = services.agent_create(actor=None, slug=slug)
        if hooks:
            services.agent_hooks_replace(actor=None, agent=agent, document={"hooks": hooks})
        for name, custom_hooks in (custom or {}).items():
            services.custom_agent_put(
                actor=None,
                agent=agent,
                name=name,
                document={
                    "api_version": "azuresre.ai/v2",
                    "kind": "ExtendedAgent",
                    "metadata": {"name": name},
                    "spec": {"hooks": custom_hooks},
                },
            )
        if mode != "enforce":
            services.agent_set_mode(actor=None, agent=agent, mode=mode)
        token = services.agent_token_issue(actor=None, agent=agent, name="e2e").plaintext
        return Governed(agent=agent, token=token, console=console, root=tmp_path)

    yield make
    for wrapper in used:
        wrapper.close()
