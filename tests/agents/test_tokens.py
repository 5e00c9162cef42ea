"""Bearer tokens: stored only as digests, compared by digest, revocable, touched on use;
`manage.py bootstrap_agent` prints a working token as its last line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import models
from django.test import Client

from agents import services
from agents.models import Agent, AgentToken
from console.models import ApiToken
from console.services import api_token_issue
from console.tokens import token_digest

URL = "/api/v1/agent/hooks"


def _bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _text_values(model: type[models.Model]) -> list[str]:
    fields = [
        field.name
        for field in model._meta.concrete_fields
        if isinstance(field, models.CharField | models.TextField | models.JSONField)
    ]
    values: list[str] = []
    for row in model.objects.values_list(*fields):
        values.extend(str(value) for value in row if value is not None)
    return values


@pytest.mark.django_db
def test_no_plaintext_token_is_stored_anywhere_in_the_database(sre, alice):
    personal = api_token_issue(actor=alice, user=alice).plaintext
    extra = services.agent_token_issue(actor=alice, agent=sre.agent, name="ci").plaintext
    plaintexts = [sre.token, personal, extra]
    for model in (AgentToken, ApiToken):
        for value in _text_values(model):
            for plaintext in plaintexts:
                assert plaintext not in value
    # Every other table too: governance events, revisions, sessions.
    for model in apps.get_models():
        for value in _text_values(model):
            for plaintext in plaintexts:
                assert plaintext not in value, model.__name__
    stored = AgentToken.objects.get(prefix=extra[:12])
    assert stored.digest == token_digest(extra)
    assert len(stored.prefix) == 12 and extra.startswith(stored.prefix)


@pytest.mark.django_db
def test_valid_agent_token_authenticates_and_sets_last_used_at(sre):
    token = AgentToken.objects.get(agent=sre.agent)
    assert token.last_used_at is None
    assert Client().get(URL, **sre.headers()).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


@pytest.mark.django_db
def test_wrong_token_with_the_right_prefix_is_401(sre):
    last = sre.token[-1]
    forged = sre.token[:-1] + ("A" if last != "A" else "B")
    assert forged[:12] == sre.token[:12]
    response = Client().get(URL, **_bearer(forged))
    assert response.status_code == 401
    assert response.json()["error"] == {
        "code": "not_authenticated",
        "message": "Invalid or revoked token.",
        "fields": {},
    }
    assert AgentToken.objects.get(agent=sre.agent).last_used_at is None


@pytest.mark.django_db
def test_revoked_agent_token_is_401(sre):
    token = AgentToken.objects.get(agent=sre.agent)
    services.agent_token_revoke(actor=None, token=token)
    assert Client().get(URL, **sre.headers()).status_code == 401


@pytest.mark.django_db
def test_revoking_one_token_leaves_the_others_working(sre):
    second = services.agent_token_issue(actor=None, agent=sre.agent, name="second")
    services.agent_token_revoke(actor=None, token=AgentToken.objects.get(name="test"))
    assert Client().get(URL, **_bearer(second.plaintext)).status_code == 200


@pytest.mark.django_db
def test_revoked_personal_token_is_401(alice, sre):
    issued = api_token_issue(actor=None, user=alice)
    url = URL + "?agent=sre-agent"
    assert Client().get(url, **_bearer(issued.plaintext)).status_code == 200
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at is not None
    ApiToken.objects.filter(pk=issued.token.pk).update(revoked_at="2026-01-01T00:00:00Z")
    assert Client().get(url, **_bearer(issued.plaintext)).status_code == 401


@pytest.mark.django_db
def test_personal_token_of_a_deactivated_user_is_401(alice, sre):
    issued = api_token_issue(actor=None, user=alice)
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert Client().get(URL + "?agent=sre-agent", **_bearer(issued.plaintext)).status_code == 401


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header", ["Bearer", "Bearer a b", "Bearer xyz_unknownkind", "Bearer agt_", "Bearer pat_short"]
)
def test_malformed_or_unknown_bearer_tokens_are_401(sre, header):
    response = Client().get(URL, HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.django_db
def test_bootstrap_agent_creates_the_agent_and_prints_a_working_token_last():
    out = StringIO()
    call_command("bootstrap_agent", "fresh-agent", stdout=out)
    lines = out.getvalue().rstrip("\n").splitlines()
    token = lines[-1]
    assert token.startswith("agt_")
    assert Agent.objects.filter(slug="fresh-agent").exists()
    response = Client().get(URL, **_bearer(token))
    assert response.status_code == 200
    assert response.json() == {"hooks": {}}
    assert all(token not in line for line in lines[:-1])


@pytest.mark.django_db
def test_bootstrap_agent_again_issues_a_second_token_and_keeps_the_first(sre):
    out = StringIO()
    call_command("bootstrap_agent", "sre-agent", stdout=out)
    token = out.getvalue().rstrip("\n").splitlines()[-1]
    assert token != sre.token
    assert Agent.objects.filter(slug="sre-agent").count() == 1
    assert AgentToken.objects.filter(agent=sre.agent).count() == 2
    assert Client().get(URL, **_bearer(token)).status_code == 200
    assert Client().get(URL, **sre.headers()).status_code == 200


@pytest.mark.django_db
def test_bootstrap_agent_refuses_an_invalid_slug():
    with pytest.raises(CommandError, match="letters, digits"):
        call_command("bootstrap_agent", "not a slug!", stdout=StringIO())
    assert not Agent.objects.exists()
