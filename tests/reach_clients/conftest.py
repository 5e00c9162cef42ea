"""Fixtures for the real-client tests: one loopback-only network namespace, one scripted model
endpoint and one console (daphne) for the whole session, all inside the namespace; a hook
recorder for the wire-format tests; a governed agent per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agents import services as agent_services
from agents.models import Agent
from console import services as console_services
from tests.reach_clients.model_server import ScriptedModel
from tests.reach_clients.netns import LoopbackNamespace
from tests.reach_clients.servers import HookRecorder, NamespaceConsole


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.realclient)


@pytest.fixture(scope="session")
def namespace() -> Iterator[LoopbackNamespace]:
    ns = LoopbackNamespace()
    try:
        yield ns
    finally:
        ns.close()


@pytest.fixture(scope="session")
def scripted_model(namespace: LoopbackNamespace) -> Iterator[ScriptedModel]:
    server = ScriptedModel(namespace)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def model(scripted_model: ScriptedModel) -> ScriptedModel:
    scripted_model.script()
    return scripted_model


@pytest.fixture(scope="session")
def session_recorder(namespace: LoopbackNamespace) -> Iterator[HookRecorder]:
    server = HookRecorder(namespace)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def recorder(session_recorder: HookRecorder) -> HookRecorder:
    session_recorder.answer_with(lambda body: {})
    return session_recorder


@pytest.fixture(scope="session")
def ns_console(
    namespace: LoopbackNamespace,
    django_db_setup: None,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[NamespaceConsole]:
    with django_db_blocker.unblock():
        console = NamespaceConsole(namespace, tmp_path_factory.mktemp("console") / "daphne.log")
    try:
        yield console
    finally:
        console.close()


@dataclass
class Governed:
    """An agent the console governs, with what a test needs to drive it."""

    agent: Agent
    token: str
    console: NamespaceConsole
    reviewer_token: str
    auditor_token: str

    def connect(self, runtime: str, custom_agent: str | None = None) -> Any:
        params = {"custom_agent": custom_agent} if custom_agent else None
        answer = self.console.api(
            "GET", f"/api/v1/connect/{runtime}", token=self.token, params=params
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    def client_env(self) -> dict[str, str]:
        return {"CONSOLE_URL": self.console.url, "CONSOLE_TOKEN": self.token}


@pytest.fixture
def governed(transactional_db: None, ns_console: NamespaceConsole) -> Callable[..., Governed]:
    """`governed({"PreToolUse": [...]})` → an agent with those agent-level hooks, its token,
    and reviewer and auditor tokens."""

    def make(hooks: dict[str, list[dict[str, Any]]], *, slug: str = "coder") -> Governed:
        agent = agent_services.agent_create(actor=None, slug=slug)
        agent_services.agent_hooks_replace(actor=None, agent=agent, document={"hooks": hooks})
        token = agent_services.agent_token_issue(actor=None, agent=agent, name="client").plaintext
        people = {}
        for role in ("reviewer", "auditor"):
            user = console_services.user_set_role(actor=None, username=f"{role}-1", role=role)
            people[role] = console_services.api_token_issue(actor=None, user=user).plaintext
        return Governed(
            agent=agent,
            token=token,
            console=ns_console,
            reviewer_token=people["reviewer"],
            auditor_token=people["auditor"],
        )

    return make
