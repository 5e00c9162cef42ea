"""`manage.py bootstrap_user <username> --role … [--password P]`: creates or updates the user
in that role and prints a working personal API token as the last line of stdout."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from console.roles import is_admin, is_auditor, is_reviewer, primary_role


def _bootstrap(*args: str) -> str:
    out = StringIO()
    call_command("bootstrap_user", *args, stdout=out)
    return out.getvalue().rstrip("\n").splitlines()[-1]


@pytest.mark.django_db
def test_bootstrap_reviewer_prints_a_working_token_last_and_sets_the_password():
    token = _bootstrap("bob", "--role", "reviewer", "--password", "x")
    assert token.startswith("pat_")
    bob = User.objects.get(username="bob")
    assert is_reviewer(bob) and not is_admin(bob)
    assert primary_role(bob) == "reviewer"
    assert bob.check_password("x")
    client = Client()
    # The token authenticates (403: a reviewer may not edit hooks) rather than failing (401).
    response = client.get("/api/v1/agent/hooks?agent=any", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403
    assert client.get("/api/schema/", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    assert client.login(username="bob", password="x")


@pytest.mark.django_db
def test_bootstrap_admin_token_works_on_admin_endpoints(sre):
    token = _bootstrap("ada", "--role", "admin")
    response = Client().get(
        "/api/v1/agent/hooks?agent=sre-agent", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200
    assert not User.objects.get(username="ada").has_usable_password()


@pytest.mark.django_db
def test_rerun_updates_the_role_and_keeps_the_password():
    _bootstrap("bob", "--role", "reviewer", "--password", "x")
    token = _bootstrap("bob", "--role", "auditor")
    bob = User.objects.get(username="bob")
    assert is_auditor(bob) and not is_reviewer(bob)
    assert list(bob.groups.values_list("name", flat=True)) == ["auditor"]
    assert bob.check_password("x")
    assert User.objects.filter(username="bob").count() == 1
    assert Client().get("/api/schema/", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


@pytest.mark.django_db
def test_unknown_role_is_refused():
    with pytest.raises(CommandError):
        call_command("bootstrap_user", "bob", "--role", "superhero", stdout=StringIO())
    assert not User.objects.filter(username="bob").exists()
