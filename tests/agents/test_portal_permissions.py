"""Only admins reach the portal: reviewers, auditors and people with no role get 403 on
every page and every POST, and nothing changes; anonymous visitors are sent to log in."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import AgentToken, ConfigRevision


@pytest.fixture
def portal(sre):
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    hook, _ = services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PostToolUse",
        raw={"type": "command", "matcher": "*", "command": "echo"},
    )
    revision = ConfigRevision.objects.filter(agent=sre.agent).order_by("number")[0]
    token = AgentToken.objects.get(agent=sre.agent)
    base = "/agents/sre-agent"
    pages = [
        "/agents/",
        f"{base}/",
        f"{base}/settings/",
        f"{base}/hooks/new/",
        f"{base}/hooks/{hook.key}/",
        f"{base}/custom/",
        f"{base}/custom/{custom_agent.name}/",
        f"{base}/custom/{custom_agent.name}/hooks/new/",
        f"{base}/custom/{custom_agent.name}/settings/",
        f"{base}/custom/{custom_agent.name}/yaml/",
        f"{base}/custom/{custom_agent.name}/export/",
        f"{base}/custom/{custom_agent.name}/history/",
        f"{base}/tokens/",
        f"{base}/history/",
        f"{base}/history/{revision.number}/",
    ]
    posts = [
        ("/agents/", {"slug": "sneaky"}),
        (f"{base}/mode/", {"mode": "evaluate_only"}),
        (f"{base}/settings/", {"display_name": "x", "webhook_format": "json"}),
        (f"{base}/hooks/new/", {"event": "Stop", "type": "command", "command": "x"}),
        (f"{base}/hooks/{hook.key}/", {"type": "command", "matcher": "*", "command": "y"}),
        (f"{base}/hooks/{hook.key}/enabled/", {"enabled": "0"}),
        (f"{base}/hooks/{hook.key}/move/", {"direction": "up"}),
        (f"{base}/hooks/{hook.key}/delete/", {}),
        (f"{base}/custom/", {"name": "sneaky"}),
        (f"{base}/import/", {"text": "api_version: azuresre.ai/v2"}),
        (f"{base}/custom/triage/settings/", {"instructions": "x"}),
        (f"{base}/custom/triage/yaml/", {"text": "kind: ExtendedAgent"}),
        (f"{base}/custom/triage/delete/", {}),
        (f"{base}/tokens/", {"name": "sneaky"}),
        (f"{base}/tokens/{token.pk}/revoke/", {}),
        (f"{base}/history/{revision.number}/rollback/", {}),
    ]
    return pages, posts


def _state():
    return (
        ConfigRevision.objects.count(),
        AgentToken.objects.count(),
        AgentToken.objects.filter(revoked_at__isnull=False).count(),
    )


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["reviewer_client", "auditor_client", "outsider_client"])
def test_non_admins_can_neither_see_nor_post(request, portal, persona):
    client = request.getfixturevalue(persona)
    pages, posts = portal
    before = _state()
    for url in pages:
        assert client.get(url).status_code in (403, 404), url
    for url, data in posts:
        assert client.post(url, data).status_code in (403, 404), url
        assert client.post(url, data, HTTP_HX_REQUEST="true").status_code in (403, 404), url
    assert _state() == before


@pytest.mark.django_db
def test_anonymous_visitors_are_sent_to_the_login_page(client, portal):
    pages, posts = portal
    before = _state()
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/accounts/login/"), url
    for url, data in posts:
        assert client.post(url, data).status_code == 302, url
    assert _state() == before


@pytest.mark.django_db
def test_every_page_renders_for_an_admin(admin_client, portal):
    pages, _ = portal
    for url in pages:
        assert admin_client.get(url).status_code == 200, url
