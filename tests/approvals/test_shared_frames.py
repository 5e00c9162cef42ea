"""A push is read and rendered once per reviewer reach in a process (approvals.frames), each
socket's access still re-checked before it gets anything."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

import pytest
from asgiref.sync import sync_to_async

from approvals import frames as shared_frames
from approvals import services
from approvals.models import ReviewerScope
from tests.approvals.conftest import approval_hook, in_own_thread, make_reviewer
from tests.approvals.test_consumers import closed_before_the_next_escalation, frames, open_as

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def counted(monkeypatch):
    """frames.stats from zero; a long sharing window, so a slow machine shares all the same."""
    monkeypatch.setattr(shared_frames, "SHARED_SECONDS", 60.0)
    monkeypatch.setitem(shared_frames.stats, "reads", 0)
    monkeypatch.setitem(shared_frames.stats, "renders", 0)
    return shared_frames.stats


def scoped_reviewer(username: str, agent) -> object:
    user = make_reviewer(username)
    services.reviewer_scope_set(actor=None, user=user, agents=[agent])
    return user


async def test_one_read_and_render_serves_every_socket_of_one_reach_not_another_reach(
    rita, sre, other, escalate, counted, close_db_after
):
    rob = await sync_to_async(make_reviewer)("rob")  # unrestricted, like rita: the same reach
    olga = await sync_to_async(scoped_reviewer)("olga", other.agent)
    sockets = [(await open_as(user))[1] for user in (rita, rita, rob)]  # rita has two tabs
    _browser, olgas = await open_as(olga)
    counted.update(reads=0, renders=0)

    created = await asyncio.to_thread(in_own_thread(escalate), "restart_service", {"n": 1})
    received = [await frames(socket, 2) for socket in sockets]
    assert f'id="esc-{created.pk}"' in received[0][0] and ">1</span>" in received[0][1]
    assert received[1] == received[0] and received[2] == received[0]
    assert await olgas.receive_nothing(timeout=1)  # sre-agent is not in olga's reach
    # One read for the shared reach, one for olga's (which finds nothing); one row render.
    assert counted == {"reads": 2, "renders": 1}

    counted.update(reads=0, renders=0)
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=created,
        actor=rita,
        outcome="reject",
        reason="no",
    )
    decided = [await frames(socket, 2) for socket in sockets]
    removed = f'<tr id="esc-{created.pk}" hx-swap-oob="delete"></tr>'
    assert decided[0][0] == removed and decided[1][0] == removed  # rita decided it
    assert "departed" in decided[2][0] and "rita" in decided[2][0]  # rob sees who did
    assert decided[0][1] == decided[2][1] and ">1</span>" not in decided[0][1]
    assert await olgas.receive_nothing(timeout=1)
    assert counted == {"reads": 2, "renders": 2}  # the two variants of one read
    for socket in (*sockets, olgas):
        await socket.disconnect()


async def test_each_reviewers_own_vote_shows_from_one_shared_read(
    rita, sre, escalate, counted, close_db_after
):
    hook = await sync_to_async(approval_hook)(sre, approvalsRequired=2)
    escalation = await sync_to_async(escalate)(hook=hook.key)
    rob = await sync_to_async(make_reviewer)("rob")
    _b1, ritas = await open_as(rita)
    _b2, robs = await open_as(rob)
    counted.update(reads=0, renders=0)

    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=escalation,
        actor=rita,
        outcome="approve",
    )
    (rita_row, rita_counter), (rob_row, rob_counter) = await frames(ritas, 2), await frames(robs, 2)
    assert "1/2 approvals" in rita_row and "1/2 approvals" in rob_row
    assert "you voted approve" in rita_row and "you voted" not in rob_row
    assert rita_counter == rob_counter
    assert counted == {"reads": 1, "renders": 2}
    await ritas.disconnect()
    await robs.disconnect()


async def test_a_socket_whose_scope_narrowed_gets_no_shared_frame(
    rita, sre, other, escalate, counted, close_db_after
):
    rob = await sync_to_async(make_reviewer)("rob")
    _b1, ritas = await open_as(rita)
    _b2, robs = await open_as(rob)
    # Narrowed behind the service's back (no access push): only the re-check can see it.
    await sync_to_async(ReviewerScope.objects.create)(user=rob, agent=other.agent)

    created = await asyncio.to_thread(in_own_thread(escalate), "restart_service", {"s": "x"})
    assert f'id="esc-{created.pk}"' in (await frames(ritas, 2))[0]
    output = await robs.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 4403}
    await robs.wait()
    await ritas.disconnect()


async def test_a_socket_whose_role_went_gets_no_shared_frame(
    rita, sre, escalate, counted, close_db_after
):
    rob = await sync_to_async(make_reviewer)("rob")
    _b1, ritas = await open_as(rita)
    _b2, robs = await open_as(rob)
    await sync_to_async(rob.groups.clear)()  # no access push either
    await closed_before_the_next_escalation(robs, escalate, 4403)
    assert 'id="esc-' in (await frames(ritas, 2))[0]  # rita's read was made, rob got none
    await ritas.disconnect()


def test_shared_reads_are_kept_only_briefly(rita, escalate, monkeypatch):
    monkeypatch.setattr(shared_frames, "_shared", OrderedDict())
    monkeypatch.setattr(shared_frames, "SHARED_SECONDS", 0.05)
    created = escalate()
    assert shared_frames.change(rita, "inbox", str(created.pk), "created", push="one")
    assert [key[0] for key in shared_frames._shared] == ["one"]
    time.sleep(0.1)
    assert shared_frames.change(rita, "inbox", str(created.pk), "created", push="two")
    assert [key[0] for key in shared_frames._shared] == ["two"]  # "one" was past its time
    shared_frames.change(rita, "inbox", str(created.pk), "created")  # no push id: not kept
    assert [key[0] for key in shared_frames._shared] == ["two"]
