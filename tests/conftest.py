"""Standing personas: alice (admin), rita (reviewer), audrey (auditor), charlie (no role);
agents `sre-agent` and `other-agent`, each with a live token; `fast_password_hashing`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents import services as agent_services
from agents.models import Agent
from console import services as console_services

# MD5 hashes a password in microseconds; the default hasher costs ~0.3 s per persona.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def fast_password_hashing(settings: Any) -> None:
    """For folders whose tests create personas in every test (their conftest makes it
    autouse). Not for users who log in on a server in another process: it keeps the
    default hashers and could not check these hashes."""
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


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
