"""Repeated failed logins lock the username out, even with the right password afterwards."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_fifth_failure_locks_out_and_right_password_then_refused(alice):
    client = Client()
    for _ in range(5):
        response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 429
    locked = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_a_few_failures_then_right_password_logs_in(alice):
    client = Client()
    for _ in range(3):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(alice.pk)
