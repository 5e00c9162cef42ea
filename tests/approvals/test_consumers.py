"""/ws/approvals/: session-authenticated reviewers get live, server-rendered htmx frames."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from approvals import services
from console import services as console_services
from console.asgi import application
from tests.approvals.conftest import approval_hook, in_own_thread
from users import services as user_services

pytestmark = pytest.mark.django_db(transaction=True)


def session_headers(user, origin: str = "http://testserver") -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    return [(b"cookie", cookie.encode()), (b"origin", origin.encode())]


async def connect(user=None, view: str = "inbox", origin: str = "http://testserver"):
    headers = (
        await sync_to_async(session_headers)(user, origin)
        if user
        else [(b"origin", origin.encode())]
    )
    communicator = WebsocketCommunicator(application, f"/ws/approvals/?view={view}", headers)
    connected, _code = await communicator.connect(timeout=5)
    return communicator, connected


async def frames(socket, count: int) -> list[str]:
    return [await socket.receive_from(timeout=5) for _ in range(count)]


async def test_reviewer_gets_resync_then_new_row_then_its_removal(rita, escalate, close_db_after):
    existing = await sync_to_async(escalate)("scale_deployment")
    socket, connected = await connect(rita)
    assert connected
    rows, counter = await frames(socket, 2)
    assert 'id="nav-pending-count"' in counter and ">1</span>" in counter
    # Table elements travel alone: after an inline element the HTML parser would drop them.
    assert rows.startswith('<tbody id="pending-rows" hx-swap-oob="innerHTML">')
    assert f'id="esc-{existing.pk}"' in rows

    created = await asyncio.to_thread(
        in_own_thread(escalate), "restart_service", {"service": "pay"}
    )
    frame, counter = await frames(socket, 2)
    assert frame.startswith('<tbody id="pending-rows" hx-swap-oob="afterbegin">')
    assert f'id="esc-{created.pk}"' in frame
    assert "restart_service" in frame and "&quot;pay&quot;" in frame
    assert ">2</span>" in counter  # the nav counter, out of band

    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=created,
        actor=rita,
        outcome="reject",
        reason="no",
    )
    frame, counter = await frames(socket, 2)
    assert frame == f'<tr id="esc-{created.pk}" hx-swap-oob="delete"></tr>'
    assert ">1</span>" in counter
    await socket.disconnect()


async def test_nav_view_gets_only_the_counter(rita, escalate, close_db_after):
    socket, connected = await connect(rita, view="nav")
    assert connected
    assert "pending-rows" not in await socket.receive_from(timeout=5)
    await asyncio.to_thread(in_own_thread(escalate))
    frame = await socket.receive_from(timeout=5)
    assert 'id="nav-pending-count"' in frame and "pending-rows" not in frame
    await socket.disconnect()


async def test_a_capped_inbox_gets_its_first_rows_and_a_refill_when_it_asks(
    rita, escalate, settings, close_db_after
):
    settings.CONSOLE_INBOX_ROWS = 2
    first, second, third = [
        await asyncio.to_thread(in_own_thread(escalate), tool)
        for tool in ("restart_service", "scale_deployment", "restart_service")
    ]
    socket, connected = await connect(rita, view="inbox&sort=newest")
    assert connected
    rows, counter = await frames(socket, 2)
    assert re.findall(r'<tr id="esc-([0-9a-f-]+)"', rows) == [str(third.pk), str(second.pk)]
    assert ">3</span>" in counter
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=third,
        actor=rita,
        outcome="reject",
        reason="no",
    )
    await frames(socket, 2)  # the row's removal and the counter
    # Only a well-formed request is answered; the nav view never gets rows.
    for noise in ("resync", '{"resync": 1}', '{"resync": "true"}', "[]", "x" * 100_000):
        await socket.send_to(text_data=noise)
    assert await socket.receive_nothing(timeout=0.5)
    # A page flooding requests gets one re-sync (at most one a second), not one per message.
    for _ in range(20):
        await socket.send_to(text_data='{"resync": true}')
    rows, counter = await frames(socket, 2)
    assert re.findall(r'<tr id="esc-([0-9a-f-]+)"', rows) == [str(second.pk), str(first.pk)]
    assert ">2</span>" in counter
    assert await socket.receive_nothing(timeout=1.5)
    await socket.disconnect()
    nav, connected = await connect(rita, view="nav")
    assert connected
    await frames(nav, 1)
    await nav.send_to(text_data='{"resync": true}')
    assert await nav.receive_nothing(timeout=0.5)
    await nav.disconnect()


async def test_anonymous_auditor_and_outsider_are_refused(audrey, charlie, close_db_after):
    for user in (None, audrey, charlie):
        socket, connected = await connect(user)
        assert not connected
        await socket.disconnect()


async def test_foreign_origin_is_refused(rita, close_db_after):
    socket, connected = await connect(rita, origin="http://evil.example")
    assert not connected
    await socket.disconnect()


async def test_restricted_reviewer_gets_nothing_for_other_agents(
    rita, alice, other, escalate, close_db_after
):
    await sync_to_async(services.reviewer_scope_set)(actor=alice, user=rita, agents=[other.agent])
    socket, connected = await connect(rita)
    assert connected
    await frames(socket, 2)  # re-sync
    await asyncio.to_thread(in_own_thread(escalate))  # sre-agent: not rita's
    assert await socket.receive_nothing(timeout=1)
    theirs = await asyncio.to_thread(in_own_thread(escalate), agent=other)
    assert f'id="esc-{theirs.pk}"' in (await frames(socket, 2))[0]
    await socket.disconnect()


async def test_a_vote_that_does_not_decide_replaces_the_row(
    rita, alice, sre, escalate, close_db_after
):
    hook = await sync_to_async(approval_hook)(sre, approvalsRequired=2)
    escalation = await sync_to_async(escalate)(hook=hook.key)
    socket, connected = await connect(alice)
    assert connected
    await frames(socket, 2)
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=escalation,
        actor=rita,
        outcome="approve",
    )
    frame, _counter = await frames(socket, 2)
    assert f'id="esc-{escalation.pk}"' in frame and 'hx-swap-oob="outerHTML"' in frame
    assert "1/2 approvals" in frame
    await socket.disconnect()


async def test_a_new_row_arrives_marked_and_the_counter_knows_its_expiry(
    rita, escalate, close_db_after
):
    socket, connected = await connect(rita)
    assert connected
    await frames(socket, 2)
    created = await asyncio.to_thread(in_own_thread(escalate))
    frame, counter = await frames(socket, 2)
    assert re.search(rf'<tr id="esc-{created.pk}" class="esc arrived"', frame)
    assert ">new</span>" in frame
    expiry = int(created.expires_at.timestamp() * 1000)
    assert 'data-count="1"' in counter and f'data-expiries="{expiry}"' in counter
    assert 'hx-swap-oob="true"' in counter
    await socket.disconnect()


async def test_a_row_decided_by_someone_else_says_who_before_it_leaves(
    rita, alice, escalate, close_db_after
):
    escalation = await sync_to_async(escalate)()
    socket, connected = await connect(rita)
    assert connected
    await frames(socket, 2)
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=escalation,
        actor=alice,
        outcome="reject",
        reason="not now",
    )
    frame, counter = await frames(socket, 2)
    assert frame.startswith(f'<tr id="esc-{escalation.pk}" class="esc departed"')
    assert 'hx-swap-oob="outerHTML"' in frame
    assert "Rejected by alice" in frame
    assert "approve-form" not in frame and " disabled>" in frame
    assert 'data-count="0"' in counter
    await socket.disconnect()


async def test_a_row_expired_by_the_sweep_says_so_before_it_leaves(rita, escalate, close_db_after):
    escalation = await sync_to_async(escalate)()
    socket, connected = await connect(rita)
    assert connected
    await frames(socket, 2)
    await asyncio.to_thread(
        in_own_thread(services.escalation_expire_overdue),
        now=escalation.expires_at + timedelta(seconds=1),
    )
    frame, _counter = await frames(socket, 2)
    assert f'<tr id="esc-{escalation.pk}" class="esc departed"' in frame
    assert "Expired with no decision" in frame
    await socket.disconnect()


# Access is re-checked on every push ---------------------------------------------------------


async def open_as(user) -> tuple[Client, WebsocketCommunicator]:
    """A logged-in browser (its Client, to log out or not) and its inbox socket, re-synced."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    headers = [
        (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
        (b"origin", b"http://testserver"),
    ]
    socket = WebsocketCommunicator(application, "/ws/approvals/?view=inbox", headers)
    connected, _code = await socket.connect(timeout=5)
    assert connected
    await frames(socket, 2)  # the re-sync: counter and rows
    return client, socket


async def closed_before_the_next_escalation(socket, escalate, code: int, agent=None) -> None:
    """A new escalation with secret arguments: the socket closes with `code`, sends nothing."""
    await asyncio.to_thread(
        in_own_thread(escalate), "restart_service", {"service": "secret-db"}, agent
    )
    output = await socket.receive_output(timeout=5)
    assert output["type"] == "websocket.close", output
    assert output["code"] == code
    await socket.wait()


async def test_logout_closes_the_socket(rita, escalate, close_db_after):
    browser, socket = await open_as(rita)
    await sync_to_async(browser.logout)()
    await closed_before_the_next_escalation(socket, escalate, 4401)


async def test_an_expired_session_closes_the_socket(rita, escalate, close_db_after):
    browser, socket = await open_as(rita)
    key = browser.cookies["sessionid"].value
    await sync_to_async(Session.objects.filter(session_key=key).update)(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    await closed_before_the_next_escalation(socket, escalate, 4401)


async def test_a_password_change_elsewhere_closes_the_socket(rita, escalate, close_db_after):
    _browser, socket = await open_as(rita)

    def change_password() -> None:
        rita.set_password("a-new-password-9")
        rita.save(update_fields=["password"])

    await sync_to_async(change_password)()
    await closed_before_the_next_escalation(socket, escalate, 4401)


async def test_deactivation_closes_the_socket(rita, escalate, close_db_after):
    _browser, socket = await open_as(rita)
    await sync_to_async(User.objects.filter(pk=rita.pk).update)(is_active=False)
    await closed_before_the_next_escalation(socket, escalate, 4401)


async def test_deactivation_by_an_admin_closes_the_socket_at_once(rita, alice, close_db_after):
    """No escalation needed: the deactivation itself wakes the socket, which re-checks."""
    _browser, socket = await open_as(rita)
    await asyncio.to_thread(in_own_thread(user_services.user_deactivate), actor=alice, user=rita)
    output = await socket.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 4401}
    await socket.wait()


async def test_roles_taken_by_an_admin_close_the_socket_at_once(rita, alice, close_db_after):
    _browser, socket = await open_as(rita)
    await asyncio.to_thread(
        in_own_thread(user_services.user_update),
        actor=alice,
        user=rita,
        roles=["auditor"],
        agent_slugs=[],
    )
    output = await socket.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 4403}
    await socket.wait()


async def test_someone_elses_deactivation_keeps_the_socket(rita, alice, audrey, close_db_after):
    _browser, socket = await open_as(rita)
    await asyncio.to_thread(in_own_thread(user_services.user_deactivate), actor=alice, user=audrey)
    assert await socket.receive_nothing(timeout=1)
    await socket.disconnect()


async def test_losing_the_reviewer_role_closes_the_socket(rita, escalate, close_db_after):
    _browser, socket = await open_as(rita)
    await sync_to_async(rita.groups.clear)()
    await closed_before_the_next_escalation(socket, escalate, 4403)


async def test_an_admin_demoted_to_a_scoped_reviewer_is_closed_not_sent_other_agents(
    alice, other, escalate, close_db_after
):
    _browser, socket = await open_as(alice)

    def demote() -> None:
        console_services.user_set_role(actor=None, username="alice", role="reviewer")
        services.reviewer_scope_set(actor=None, user=alice, agents=[other.agent])

    await sync_to_async(demote)()
    await closed_before_the_next_escalation(socket, escalate, 4403)


async def test_a_narrower_reviewer_scope_closes_the_socket(
    rita, alice, sre, other, escalate, close_db_after
):
    await sync_to_async(services.reviewer_scope_set)(
        actor=alice, user=rita, agents=[sre.agent, other.agent]
    )
    _browser, socket = await open_as(rita)
    # sre-agent's rows on rita's screen are no longer hers: close, the page reloads narrower.
    await sync_to_async(services.reviewer_scope_set)(actor=alice, user=rita, agents=[other.agent])
    await closed_before_the_next_escalation(socket, escalate, 4403, agent=other)


async def test_a_wider_reviewer_scope_keeps_the_socket(
    rita, alice, sre, other, escalate, close_db_after
):
    await sync_to_async(services.reviewer_scope_set)(actor=alice, user=rita, agents=[other.agent])
    _browser, socket = await open_as(rita)
    await sync_to_async(services.reviewer_scope_set)(
        actor=alice, user=rita, agents=[sre.agent, other.agent]
    )
    created = await asyncio.to_thread(in_own_thread(escalate))
    assert f'id="esc-{created.pk}"' in (await frames(socket, 2))[0]
    await socket.disconnect()
