"""/agents/<slug>/connect/: "Connect an agent" (admins): settings per runtime and custom
agent, a download, the console-hook install line, a token issued once and never cached."""

from __future__ import annotations

import html
import json
import re

from agents import services as agent_services
from agents.models import AgentToken
from tests.runtimes.runtime_support import CLAUDE_PRE

URL = "/agents/sre-agent/connect/"


def test_claude_code_settings_are_shown_by_default(admin_client, sre):
    page = admin_client.get(URL)
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    assert "http://testserver/api/v1/hooks/claude-code" in text
    assert '"onFailure": "block"' in text
    assert "export CONSOLE_URL=http://testserver" in text
    assert "/api/v1/connect/claude-code?agent=sre-agent&form=settings&download=1" in text
    assert "console-hook" not in text.split("Save this as")[0]


def test_choosing_a_runtime_and_custom_agent_without_javascript(admin_client, sre, settings):
    settings.CONSOLE_HOOK_INSTALL = "pipx install ./agent-governance-console.whl"
    agent_services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    page = admin_client.get(URL + "?runtime=codex&custom_agent=triage")
    text = html.unescape(page.content.decode())
    assert "console-hook codex --custom-agent triage --timeout 30" in text
    assert "pipx install ./agent-governance-console.whl" in text
    assert "~/.codex/hooks.json" in text


def test_htmx_gets_only_the_connect_partial(admin_client, sre):
    page = admin_client.get(URL + "?runtime=gemini-cli", HTTP_HX_REQUEST="true")
    text = page.content.decode()
    assert text.lstrip().startswith('<div id="connect">')
    assert "<html" not in text and ".gemini/settings.json" in text


def test_issuing_a_token_shows_it_once_uncached_and_it_works(admin_client, client, sre):
    page = admin_client.post(URL, {"runtime": "claude-code", "name": "laptop"})
    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    found = re.search(r"export CONSOLE_TOKEN=(agt_[\w-]+)", page.content.decode())
    assert found is not None
    token = AgentToken.objects.get(agent=sre.agent, name="laptop")
    assert found.group(1).startswith(token.prefix)
    response = client.post(
        "/api/v1/hooks/claude-code",
        data=json.dumps(CLAUDE_PRE),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {found.group(1)}",
    )
    assert response.status_code == 200
    assert "no-store" not in admin_client.get(URL).get("Cache-Control", "")


def test_an_unknown_runtime_falls_back_to_claude_code(admin_client, sre):
    text = html.unescape(admin_client.get(URL + "?runtime=nope&form=zzz").content.decode())
    assert ".claude/settings.json" in text


def test_reviewers_may_not_open_it(reviewer_client, sre):
    assert reviewer_client.get(URL).status_code == 403
