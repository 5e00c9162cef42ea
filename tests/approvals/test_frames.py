"""approvals.frames.change: a push reaches every reviewer socket of a process; what does not
depend on the reviewer is read and rendered once per push, and each reviewer still gets
exactly the frames computed for them alone (their own vote, their own reach)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals import frames, services
from approvals.models import Escalation
from approvals.selectors import reviewer_reach
from tests.approvals.conftest import (
    approval_hook,
    approval_request,
    make_reviewer,
    post_escalation,
)

pytestmark = pytest.mark.django_db


def _timeless(parts: list[str]) -> list[str]:
    """The counter says when it was computed (data-now): not part of the comparison."""
    return [re.sub(r'data-now="\d+"', 'data-now=""', part) for part in parts]


def _alone_and_shared(people, escalation_id: str, kind: str, push: str):
    """Each person's frames computed alone (no push id), then for one push shared by all,
    with the number of queries the shared pass made."""
    reaches = {person.username: reviewer_reach(person) for person in people}
    alone = {
        person.username: _timeless(
            frames.change(person, reaches[person.username], "inbox", escalation_id, kind)
        )
        for person in people
    }
    with CaptureQueriesContext(connection) as queries:
        shared = {
            person.username: _timeless(
                frames.change(person, reaches[person.username], "inbox", escalation_id, kind, push)
            )
            for person in people
        }
    return alone, shared, len(queries.captured_queries)


def test_one_push_reads_once_and_each_reviewer_gets_their_own_frames(alice, rita, sre, other):
    approval_hook(sre, approvalsRequired=2)
    response = post_escalation(Client(), sre, approval_request("restart_service"))
    escalation_id = response.json()["id"]
    services.escalation_decide(
        escalation=Escalation.objects.get(pk=escalation_id), actor=rita, outcome="approve"
    )
    ricky, sam, olga = make_reviewer("ricky"), make_reviewer("sam"), make_reviewer("olga")
    services.reviewer_scope_set(actor=None, user=sam, agents=[sre.agent])
    services.reviewer_scope_set(actor=None, user=olga, agents=[other.agent])
    people = [alice, rita, ricky, sam, olga]

    alone, shared, queries = _alone_and_shared(people, escalation_id, "updated", "push-1")

    assert shared == alone
    assert alone["olga"] == []  # outside her reach: not even the counter
    assert "you voted approve" in alone["rita"][0]
    assert "you voted" not in alone["ricky"][0] and "1/2 approvals" in alone["ricky"][0]
    assert alone["sam"] == alone["ricky"]
    # The row with its votes once; then a counter per distinct reach (every agent; sre's).
    assert queries == 1 + 2

    services.escalation_decide(
        escalation=Escalation.objects.get(pk=escalation_id), actor=alice, outcome="approve"
    )
    alone, shared, queries = _alone_and_shared(people, escalation_id, "decided", "push-2")

    assert shared == alone
    assert alone["alice"][0] == f'<tr id="esc-{escalation_id}" hx-swap-oob="delete"></tr>'
    assert "Approved by alice" in alone["rita"][0] and "departed" in alone["ricky"][0]
    assert queries == 1 + 2  # a new push reads again: nothing of push-1 is reused
