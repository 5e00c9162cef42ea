"""Standing personas: alice (admin), rita (reviewer), audrey (auditor), charlie (no role);
agents `sre-agent` and `other-agent`, each with a live token; `fast_password_hashing`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client

from agents import services as agent_services
from agents.models import Agent
from console import services as console_services
from tests import loopback_only

# MD5 hashes a password in microseconds; the default hasher costs ~0.75 s per persona here.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# Test folders whose users log in on servers in other processes: those keep the default
# hashers and could not check an MD5 hash.
OWN_SERVER_FOLDERS = frozenset(
    {"browser", "conformance", "e2e", "faults", "reach_clients", "security"}
)


loopback_only.install()


@pytest.fixture(autouse=True)
def _loopback_only() -> Iterator[None]:
    """Fails the test during which this process looked up or connected beyond loopback
    (tests/loopback_only.py)."""
    mark = loopback_only.mark()
    yield
    if refused := loopback_only.take_since(mark):
        pytest.fail("reached beyond loopback: " + "; ".join(refused), pytrace=False)


@pytest.fixture
async def close_db_after():
    """Async tests reach the database from asgiref's sync thread, which outlives the test:
    close its connection, or it keeps a session on the test database past its teardown."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def fast_password_hashing(settings: Any) -> None:
    """For a test of OWN_SERVER_FOLDERS whose server runs in this process (live_server)."""
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture(autouse=True)
def _fast_password_hashing(request: pytest.FixtureRequest) -> None:
    """Every test outside OWN_SERVER_FOLDERS: a persona costs ~0.75 s with the default."""
    folder = request.path.relative_to(Path(__file__).parent).parts[0]
    if folder not in OWN_SERVER_FOLDERS:
        request.getfixturevalue("fast_password_hashing")


@dataclass
class AgentWithToken:
    agent: Agent
    token: str

    def headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}


def _user(username: str, role: str | None) -> User:
    if role is None:
        return User.objects.create_user(username=username, password="pw-" + username)
    return console_services.user_set_role(
        actor=None, username=username, role=role, password="pw-" + username
    )


@pytest.fixture
def alice(db: Any) -> User:
    return _user("alice", "admin")


@pytest.fixture
def rita(db: Any) -> User:
    return _user("rita", "reviewer")


@pytest.fixture
def audrey(db: Any) -> User:
    return _user("audrey", "auditor")


@pytest.fixture
def charlie(db: Any) -> User:
    return _user("charlie", None)


def _client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin_client(alice: User) -> Client:
    return _client_for(alice)


@pytest.fixture
def reviewer_client(rita: User) -> Client:
    return _client_for(rita)


@pytest.fixture
def auditor_client(audrey: User) -> Client:
    return _client_for(audrey)


@pytest.fixture
def outsider_client(charlie: User) -> Client:
    return _client_for(charlie)


def _agent(slug: str) -> AgentWithToken:
    agent = agent_services.agent_create(actor=None, slug=slug)
    issued = agent_services.agent_token_issue(actor=None, agent=agent, name="test")
    return AgentWithToken(agent=agent, token=issued.plaintext)


@pytest.fixture
def sre(db: Any) -> AgentWithToken:
    return _agent("sre-agent")


@pytest.fixture
def other(db: Any) -> AgentWithToken:
    return _agent("other-agent")
