"""Deactivating a user: their sessions end, their personal tokens stop working on the API,
nobody can sign in as them; yourself and the last admin are refused; reactivation."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from console import services as console_services
from console.governance.models import GovernanceEvent
from console.models import ApiToken
from users.services import UserProblems, user_deactivate

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_confirmation_page_says_what_will_happen(admin_client, rita):
    console_services.api_token_issue(actor=None, user=rita, name="cli")
    html = admin_client.get(f"/users/{rita.pk}/deactivate/").content.decode()
    assert "Deactivate rita?" in html and "every session ends" in html
    assert "1 active personal API token is revoked" in html
    assert rita.is_active


def test_deactivation_ends_sessions_tokens_and_sign_in(admin_client, alice, rita, audrey):
    laptop, phone, bystander = signed_in(rita), signed_in(rita), signed_in(audrey)
    token = console_services.api_token_issue(actor=None, user=rita, name="cli").plaintext
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert Client().get("/api/v1/escalations", **bearer).status_code == 200

    response = admin_client.post(f"/users/{rita.pk}/deactivate/", follow=True)
    assert response.redirect_chain == [(f"/users/{rita.pk}/", 302)]
    html = response.content.decode()
    assert "Deactivated rita: 2 session(s) ended, 1 API token(s) revoked" in html
    assert "deactivated" in html

    rita.refresh_from_db()
    assert not rita.is_active
    for client in (laptop, phone):
        assert client.get("/approvals/")["Location"].startswith("/accounts/login/")
    assert bystander.get("/audit/").status_code == 200  # other people's sessions stay
    assert Session.objects.count() == 2  # the admin's and the bystander's
    assert Client().get("/api/v1/escalations", **bearer).status_code == 401
    assert not ApiToken.objects.filter(user=rita, revoked_at=None).exists()
    assert not Client().login(username="rita", password="pw-rita")
    event = GovernanceEvent.objects.get(action="user.deactivated")
    assert event.actor == alice and event.object_id == str(rita.pk)
    assert event.after["sessions_ended"] == 2 and len(event.after["tokens_revoked"]) == 1


def test_an_admin_cannot_deactivate_themselves(admin_client, alice, anna):
    before = GovernanceEvent.objects.count()
    response = admin_client.post(f"/users/{alice.pk}/deactivate/")
    assert response.status_code == 409
    assert "You cannot deactivate yourself" in response.content.decode()
    alice.refresh_from_db()
    assert alice.is_active and GovernanceEvent.objects.count() == before


def test_the_last_admin_cannot_be_deactivated(alice):
    with pytest.raises(UserProblems, match="alice is the last active admin"):
        user_deactivate(actor=None, user=alice)
    alice.refresh_from_db()
    assert alice.is_active


def test_reactivation_lets_them_sign_in_again_but_keeps_old_tokens_revoked(admin_client, rita):
    token = console_services.api_token_issue(actor=None, user=rita, name="cli").plaintext
    admin_client.post(f"/users/{rita.pk}/deactivate/")
    response = admin_client.post(f"/users/{rita.pk}/reactivate/", follow=True)
    assert "Reactivated rita." in response.content.decode()
    assert Client().login(username="rita", password="pw-rita")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert Client().get("/api/v1/escalations", **bearer).status_code == 401
    assert GovernanceEvent.objects.filter(action="user.reactivated").count() == 1


def test_a_deactivated_user_gets_no_new_token_or_link(admin_client, rita):
    admin_client.post(f"/users/{rita.pk}/deactivate/")
    refused = admin_client.post(f"/users/{rita.pk}/invitation/")
    assert refused.status_code == 409 and "reactivate them first" in refused.content.decode()
    form = admin_client.post(f"/users/{rita.pk}/tokens/", {"name": "cli"})
    assert "reactivate them first" in form.content.decode()
    assert not ApiToken.objects.filter(user=rita).exists()
