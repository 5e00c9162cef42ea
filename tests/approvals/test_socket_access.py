"""The reviewer socket's re-check before each push: one query while nothing changed, and the
full check (the same answer as the pages) as soon as anything did."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals import services
from approvals.socket_access import AccessEnded, socket_access

pytestmark = pytest.mark.django_db


def session_key(user: User) -> str:
    client = Client()
    client.force_login(user)
    return str(client.cookies["sessionid"].value)


def test_an_unchanged_reviewer_is_rechecked_in_one_query(rita):
    key = session_key(rita)
    first = socket_access(key)
    with CaptureQueriesContext(connection) as queries:
        again = socket_access(key, before=first)
    assert len(queries) == 1
    assert again.user.pk == rita.pk and again.reach == first.reach


def test_an_unchanged_scoped_reviewer_keeps_their_reach_in_one_query(rita, alice, sre, other):
    services.reviewer_scope_set(actor=alice, user=rita, agents=[sre.agent, other.agent])
    key = session_key(rita)
    first = socket_access(key)
    with CaptureQueriesContext(connection) as queries:
        again = socket_access(key, before=first)
    assert len(queries) == 1
    assert again.reach.agent_ids == {sre.agent.pk, other.agent.pk}


def test_a_session_that_now_belongs_to_someone_else_ends_the_access(rita, alice):
    """The one-query path compares the session's user with the socket's; another user's
    session under the same key takes the full path, which refuses it."""
    key = session_key(rita)
    first = socket_access(key)
    client = Client()
    client.cookies["sessionid"] = key
    client.force_login(alice)  # a new login cycles the key: put alice under rita's old key
    alice_session = Session.objects.get(session_key=client.cookies["sessionid"].value)
    Session.objects.filter(session_key=key).update(session_data=alice_session.session_data)
    with pytest.raises(AccessEnded):
        socket_access(key, before=first)


def test_a_narrower_scope_and_a_lost_role_end_the_access(rita, alice, sre, other):
    services.reviewer_scope_set(actor=alice, user=rita, agents=[sre.agent, other.agent])
    key = session_key(rita)
    first = socket_access(key)
    services.reviewer_scope_set(actor=alice, user=rita, agents=[other.agent])
    with pytest.raises(AccessEnded):
        socket_access(key, before=first)
    services.reviewer_scope_set(actor=alice, user=rita, agents=[])
    wide = socket_access(key)
    rita.groups.clear()
    with pytest.raises(AccessEnded):
        socket_access(key, before=wide)
