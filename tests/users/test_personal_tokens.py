"""Personal API tokens on a user's page: shown once, stored as a digest, working on the API
with the user's role, and 401 from the moment they are revoked."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from console.governance.models import GovernanceEvent
from console.models import ApiToken
from console.tokens import token_digest

pytestmark = pytest.mark.django_db


def issue(admin_client, user, name="ci-export") -> str:
    response = admin_client.post(f"/users/{user.pk}/tokens/", {"name": name})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    return re.search(r'id="token-plaintext">(pat_[^<]+)<', response.content.decode()).group(1)


def test_a_token_is_shown_once_and_stored_as_a_digest(admin_client, audrey):
    plaintext = issue(admin_client, audrey)
    stored = ApiToken.objects.get(user=audrey)
    assert stored.digest == token_digest(plaintext) and plaintext not in stored.digest
    page = admin_client.get(f"/users/{audrey.pk}/").content.decode()
    assert plaintext not in page and f"{stored.prefix}…" in page
    assert GovernanceEvent.objects.filter(action="token.issued", object_id=str(stored.pk)).exists()


def test_the_token_carries_the_users_role_until_it_is_revoked(admin_client, alice, audrey):
    plaintext = issue(admin_client, audrey)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {plaintext}"}
    assert Client().get("/api/v1/records", **bearer).status_code == 200
    assert Client().get("/api/v1/escalations", **bearer).status_code == 403  # not a reviewer

    token = ApiToken.objects.get(user=audrey)
    response = admin_client.post(f"/users/{audrey.pk}/tokens/{token.pk}/revoke/", follow=True)
    assert f"Revoked token ci-export ({token.prefix}…)." in response.content.decode()
    assert Client().get("/api/v1/records", **bearer).status_code == 401
    revoked = GovernanceEvent.objects.get(action="token.revoked")
    assert revoked.actor == alice and revoked.object_id == str(token.pk)

    again = admin_client.post(f"/users/{audrey.pk}/tokens/{token.pk}/revoke/", follow=True)
    assert "was already revoked" in again.content.decode()
    assert GovernanceEvent.objects.filter(action="token.revoked").count() == 1


def test_a_token_needs_a_name(admin_client, audrey):
    response = admin_client.post(f"/users/{audrey.pk}/tokens/", {"name": "  "})
    html = response.content.decode()
    assert re.search(r'id="field-name".*?Name the token after what will use it', html, re.S)
    assert not ApiToken.objects.exists()


def test_a_token_of_another_user_is_404(admin_client, audrey, rita):
    plaintext = issue(admin_client, audrey)
    token = ApiToken.objects.get(user=audrey)
    response = admin_client.post(f"/users/{rita.pk}/tokens/{token.pk}/revoke/")
    assert response.status_code == 404
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {plaintext}"}
    assert Client().get("/api/v1/records", **bearer).status_code == 200
