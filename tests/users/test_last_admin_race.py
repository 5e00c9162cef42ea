"""Two admins demoting each other at the same moment: the admin role is locked first, so one
wins and the other is told the console would be left without an admin."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from users.services import UserProblems, user_roles, user_update

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_admins_demoting_each_other_leave_one_admin(alice, anna):
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def demote(actor, target) -> None:
        try:
            start.wait(timeout=5)
            user_update(actor=actor, user=target, roles=["reviewer"], agent_slugs=[])
            outcomes.append("demoted")
        except UserProblems as exc:
            outcomes.append(exc.problems["roles"][0])
        finally:
            connection.close()

    threads = [
        threading.Thread(target=demote, args=(alice, anna)),
        threading.Thread(target=demote, args=(anna, alice)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(outcomes) == 2 and outcomes.count("demoted") == 1
    refused = next(outcome for outcome in outcomes if outcome != "demoted")
    assert "is the last active admin: make someone else an admin first." in refused
    assert sorted([user_roles(alice), user_roles(anna)]) == [["admin"], ["reviewer"]]
