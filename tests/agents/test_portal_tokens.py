"""Tokens tab: a new token's plaintext is shown once and never stored; revoke needs a POST."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from agents.models import AgentToken
from console.tokens import token_matches


def _issue(client, name="prod-runner"):
    response = client.post("/agents/sre-agent/tokens/", {"name": name})
    match = re.search(
        r'<code class="token-once" id="token-plaintext">([^<]+)</code>', response.content.decode()
    )
    assert match, "the new token is shown in a token-once block"
    return response, match.group(1)


def _all_text_in_database() -> str:
    """Every text-like column of every table, concatenated: the plaintext must not be in it."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            chunks.extend(str(value) for row in cursor.fetchall() for value in row)
    return "\n".join(chunks)


@pytest.mark.django_db
def test_issued_token_is_shown_once_with_a_copy_hint(admin_client, sre):
    response, plaintext = _issue(admin_client)
    html = response.content.decode()
    assert plaintext.startswith("agt_")
    assert "shown only this once" in html
    token = AgentToken.objects.get(agent=sre.agent, name="prod-runner")
    assert plaintext.startswith(token.prefix)
    again = admin_client.get("/agents/sre-agent/tokens/").content.decode()
    assert plaintext not in again and "token-once" not in again
    assert f"{token.prefix}…" in again


@pytest.mark.django_db
def test_the_page_showing_the_plaintext_may_not_be_cached(admin_client, sre):
    response, _ = _issue(admin_client)
    directives = {d.strip() for d in response["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= directives


@pytest.mark.django_db
def test_the_plaintext_is_never_stored_only_its_digest(admin_client, sre):
    _, plaintext = _issue(admin_client)
    token = AgentToken.objects.get(name="prod-runner")
    assert token.digest != plaintext
    assert token_matches(plaintext, token.digest)
    assert plaintext not in _all_text_in_database()


@pytest.mark.django_db
def test_issued_token_authenticates_its_agent_and_shows_last_use(admin_client, client, sre):
    _, plaintext = _issue(admin_client)
    response = client.get("/api/v1/agent/hooks", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert response.status_code == 200
    token = AgentToken.objects.get(name="prod-runner")
    assert token.last_used_at is not None
    page = admin_client.get("/agents/sre-agent/tokens/").content.decode()
    row = page[page.index(f'id="token-{token.pk}"') :]
    assert token.last_used_at.strftime("%Y-%m-%d %H:%M") in row[: row.index("</tr>")]


@pytest.mark.django_db
def test_revoke_is_a_post_and_the_token_stops_working(admin_client, client, sre):
    _, plaintext = _issue(admin_client)
    token = AgentToken.objects.get(name="prod-runner")
    url = f"/agents/sre-agent/tokens/{token.pk}/revoke/"
    assert admin_client.get(url).status_code == 405
    response = admin_client.post(url, HTTP_HX_REQUEST="true")
    assert response.content.decode().lstrip().startswith('<div id="token-rows"')
    assert "revoked" in response.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is not None
    denied = client.get("/api/v1/agent/hooks", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert denied.status_code in (401, 403)


@pytest.mark.django_db
def test_cannot_revoke_another_agents_token_through_this_agent(admin_client, sre, other):
    token = AgentToken.objects.get(agent=other.agent)
    response = admin_client.post(f"/agents/sre-agent/tokens/{token.pk}/revoke/")
    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
