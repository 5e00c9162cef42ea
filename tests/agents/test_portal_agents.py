"""The agents list, agent creation, the mode switch, agent settings, and query counts."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import Agent, ConfigRevision, Mode


def _populate(slug: str, hooks: int = 3) -> Agent:
    agent = services.agent_create(actor=None, slug=slug, display_name=slug.title())
    for index in range(hooks):
        services.hook_create(
            actor=None,
            agent=agent,
            custom_agent=None,
            event=("Stop", "PostToolUse", "PreToolUse")[index % 3],
            raw={"type": "command", "command": f"echo {index}"}
            | ({} if index % 3 == 0 else {"matcher": "*"}),
        )
    custom_agent = services.custom_agent_create(actor=None, agent=agent, name="helper")
    services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=custom_agent,
        event="Stop",
        raw={"type": "prompt", "prompt": "Done?"},
    )
    services.agent_token_issue(actor=None, agent=agent, name="runner")
    return agent


@pytest.mark.django_db
def test_list_shows_each_agent_with_counts_mode_and_revision(admin_client):
    agent = _populate("alpha", hooks=3)
    services.agent_set_mode(actor=None, agent=agent, mode=Mode.EVALUATE_ONLY)
    html = admin_client.get("/agents/").content.decode()
    row = html[html.index("<code>alpha</code>") :]
    row = row[: row.index("</tr>")]
    assert 'data-label="Hooks">3<' in row
    assert 'data-label="Custom agents">1<' in row
    assert f'data-label="Revision">{Agent.objects.get(slug="alpha").revision}<' in row
    assert "mode-evaluate_only" in row and "never" in row
    assert 'aria-current="page">Agents &amp; hooks' in html


@pytest.mark.django_db
def test_agents_list_query_count_does_not_grow_with_agents(
    admin_client, django_assert_max_num_queries
):
    for index in range(6):
        _populate(f"agent-{index}")
    with django_assert_max_num_queries(7):
        response = admin_client.get("/agents/")
    assert response.content.decode().count('data-label="Slug"') == 6


@pytest.mark.django_db
def test_agent_page_query_count_does_not_grow_with_hooks(
    admin_client, django_assert_max_num_queries
):
    _populate("busy", hooks=12)
    # The health strip reads the whole scope's hooks and the recent records: two more.
    with django_assert_max_num_queries(12):
        response = admin_client.get("/agents/busy/")
    assert response.content.decode().count('class="hook-row') == 12


@pytest.mark.django_db
def test_create_agent_then_land_on_its_page(admin_client):
    response = admin_client.post(
        "/agents/", {"slug": "billing-bot", "display_name": "Billing", "description": "d"}
    )
    assert response.status_code == 302 and response.url == "/agents/billing-bot/"
    agent = Agent.objects.get(slug="billing-bot")
    assert (agent.display_name, agent.description, agent.mode) == ("Billing", "d", "enforce")
    assert ConfigRevision.objects.filter(agent=agent, action="agent.created").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("slug", "fragment"), [("no spaces", "name must be"), ("sre-agent", "already exists")]
)
def test_bad_or_taken_slug_is_shown_on_the_slug_field(admin_client, sre, slug, fragment):
    response = admin_client.post("/agents/", {"slug": slug}, HTTP_HX_REQUEST="true")
    assert response.content.decode().lstrip().startswith('<form id="agent-create-form"')
    assert fragment in " ".join(response.context["form"].errors["slug"])
    assert Agent.objects.count() == 1


@pytest.mark.django_db
def test_evaluate_only_is_unmistakable_on_the_agent_page(admin_client, sre):
    page = admin_client.get("/agents/sre-agent/").content.decode()
    assert 'class="mode-banner enforce"' in page and "EVALUATE ONLY" not in page
    response = admin_client.post("/agents/sre-agent/mode/", {"mode": "evaluate_only"})
    assert response.status_code == 302
    assert Agent.objects.get(slug="sre-agent").mode == "evaluate_only"
    page = admin_client.get("/agents/sre-agent/").content.decode()
    assert 'class="mode-banner evaluate_only"' in page
    assert (
        "EVALUATE ONLY — hooks are evaluated and recorded, nothing is blocked or escalated" in page
    )
    assert "ENFORCED" not in page


@pytest.mark.django_db
def test_mode_switch_over_htmx_returns_the_new_banner(admin_client, sre):
    response = admin_client.post(
        "/agents/sre-agent/mode/", {"mode": "evaluate_only"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="mode-banner" class="mode-banner evaluate_only"')
    assert 'name="mode" value="enforce"' in html
    assert ConfigRevision.objects.filter(action="agent.mode_changed").count() == 1


@pytest.mark.django_db
def test_unknown_mode_changes_nothing(admin_client, sre):
    admin_client.post("/agents/sre-agent/mode/", {"mode": "yolo"})
    assert Agent.objects.get(slug="sre-agent").mode == "enforce"


@pytest.mark.django_db
def test_settings_tab_saves_display_name_and_webhook(admin_client, sre):
    url = "/agents/sre-agent/settings/"
    response = admin_client.post(
        url,
        {
            "display_name": "SRE",
            "description": "On call.",
            "webhook_url": "https://hooks.example.org/x",
            "webhook_format": "slack",
        },
    )
    assert response.status_code == 302
    agent = Agent.objects.get(slug="sre-agent")
    assert (agent.display_name, agent.webhook_url, agent.webhook_format) == (
        "SRE",
        "https://hooks.example.org/x",
        "slack",
    )


@pytest.mark.django_db
def test_settings_refuse_a_bad_webhook_url_beside_the_field(admin_client, sre):
    response = admin_client.post(
        "/agents/sre-agent/settings/",
        {"webhook_url": "not a url", "webhook_format": "json"},
        HTTP_HX_REQUEST="true",
    )
    assert "webhook_url" in response.context["form"].errors
    assert Agent.objects.get(slug="sre-agent").webhook_url == ""
