"""/ws/approvals/ through the real ASGI application (console.asgi.application): who may open
the reviewers' socket, from which origins, and what a reviewer scoped to another agent sees.

The socket authenticates by session only (like the pages): bearer tokens are not accepted,
a session that no longer exists is anonymous, and an Origin that is not one of
ALLOWED_HOSTS — or no Origin at all — is refused before authentication.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.db import connections
from django.test import Client

from console.asgi import application
from tests.security.world import World

pytestmark = pytest.mark.django_db

ORIGIN = "http://testserver"
Headers = list[tuple[bytes, bytes]]


@pytest.fixture
async def close_db_after() -> Any:
    """The consumer reads the database from asgiref's thread: close that connection."""
    yield
    await sync_to_async(connections.close_all)()


def _headers(world: World, persona: str, origin: str | None = ORIGIN) -> Headers:
    headers: Headers = []
    if persona in world.sessions:
        headers.append((b"cookie", f"sessionid={world.sessions[persona]}".encode()))
    if persona in world.tokens:
        headers.append((b"authorization", f"Bearer {world.tokens[persona]}".encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return headers


async def _open(headers: Headers) -> tuple[WebsocketCommunicator, bool]:
    socket = WebsocketCommunicator(application, "/ws/approvals/?view=inbox", headers)
    connected, _code = await socket.connect(timeout=5)
    return socket, connected


PERSONA_CASES = [
    ("anon", False),
    ("admin", True),
    ("rev", True),
    ("rev_other", True),
    ("auditor", False),
    ("norole", False),
    # Bearer tokens do not authenticate a websocket, whatever role they carry.
    ("agent", False),
    ("agent_other", False),
    ("pat_admin", False),
    ("pat_rev", False),
]


@pytest.mark.parametrize(("persona", "accepted"), PERSONA_CASES)
async def test_who_may_open_the_reviewer_socket(
    world: World, persona: str, accepted: bool, close_db_after: Any
) -> None:
    socket, connected = await _open(_headers(world, persona))
    assert connected is accepted
    await socket.disconnect()


ORIGIN_CASES = [
    (ORIGIN, True),
    ("http://localhost:8000", True),
    ("https://127.0.0.1", True),
    (None, False),
    ("null", False),
    ("http://evil.example", False),
    ("http://testserver.evil.example", False),
    ("http://evil.example/?http://testserver", False),
]


@pytest.mark.parametrize(("origin", "accepted"), ORIGIN_CASES)
async def test_origin_is_checked_for_an_authorized_reviewer(
    world: World, origin: str | None, accepted: bool, close_db_after: Any
) -> None:
    socket, connected = await _open(_headers(world, "rev", origin=origin))
    assert connected is accepted
    await socket.disconnect()


def _ended_session(world: World) -> str:
    client = Client()
    client.force_login(world.users["rev"])
    key = client.cookies["sessionid"].value
    Session.objects.filter(session_key=key).delete()
    return key


async def test_a_session_that_ended_is_refused(world: World, close_db_after: Any) -> None:
    key = await sync_to_async(_ended_session)(world)
    socket, connected = await _open(
        [(b"cookie", f"sessionid={key}".encode()), (b"origin", ORIGIN.encode())]
    )
    assert not connected
    await socket.disconnect()


@pytest.mark.parametrize(
    ("persona", "sees"), [("admin", True), ("rev", True), ("rev_other", False)]
)
async def test_the_resync_holds_only_escalations_the_reviewer_may_decide(
    world: World, persona: str, sees: bool, close_db_after: Any
) -> None:
    socket, connected = await _open(_headers(world, persona))
    assert connected
    rows = await socket.receive_from(timeout=5)
    counter = await socket.receive_from(timeout=5)
    assert 'id="nav-pending-count"' in counter
    assert (f"esc-{world.escalation.pk}" in rows) is sees
    assert ("restart_service" in rows) is sees
    await socket.disconnect()
