"""History tab: revisions of each scope, diffs against the previous revision of the same
scope, and rollback through the page."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import ConfigRevision, CustomAgent, Hook
from tests.agents.review_steps import preview_then_confirm


def _hook(agent, command, custom_agent=None):
    hook, _ = services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=custom_agent,
        event="PostToolUse",
        raw={"type": "command", "matcher": "*", "command": command},
    )
    return hook


@pytest.mark.django_db
def test_history_lists_agent_level_revisions_with_who_and_what(admin_client, sre, alice):
    _hook(sre.agent, "echo one")
    admin_client.post("/agents/sre-agent/mode/", {"mode": "evaluate_only"})
    html = admin_client.get("/agents/sre-agent/history/").content.decode()
    assert "agent.mode_changed" in html and "hook.created" in html and "agent.created" in html
    assert "alice" in html and "system" in html
    assert html.index("agent.mode_changed") < html.index("hook.created")


@pytest.mark.django_db
def test_custom_agent_revisions_stay_out_of_the_agent_level_history(admin_client, sre):
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    _hook(sre.agent, "echo custom", custom_agent=custom_agent)
    agent_level = admin_client.get("/agents/sre-agent/history/").content.decode()
    assert "triage" not in agent_level
    scoped = admin_client.get("/agents/sre-agent/custom/triage/history/").content.decode()
    assert "custom_agent.created" in scoped and "hook.created" in scoped


@pytest.mark.django_db
def test_diff_compares_with_the_previous_revision_of_the_same_scope(admin_client, sre):
    hook = _hook(sre.agent, "echo one")
    first = ConfigRevision.objects.filter(agent=sre.agent).order_by("-number").first()
    services.custom_agent_create(actor=None, agent=sre.agent, name="between")
    services.hook_update(
        actor=None, hook=hook, raw={"type": "command", "matcher": "*", "command": "echo two"}
    )
    latest = ConfigRevision.objects.filter(agent=sre.agent, scope="agent").order_by("-number")[0]
    response = admin_client.get(f"/agents/sre-agent/history/{latest.number}/")
    html = response.content.decode()
    assert response.context["previous"].number == first.number
    assert '<span class="del">-    command: echo one</span>' in html
    assert '<span class="add">+    command: echo two</span>' in html
    assert "between" not in html


@pytest.mark.django_db
def test_diff_over_htmx_is_the_diff_partial_only(admin_client, sre):
    _hook(sre.agent, "echo one")
    number = ConfigRevision.objects.filter(agent=sre.agent).order_by("-number")[0].number
    response = admin_client.get(f"/agents/sre-agent/history/{number}/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card revision-card"')
    assert "<html" not in html


@pytest.mark.django_db
def test_roll_back_through_the_page_restores_hooks_and_records_a_new_revision(
    admin_client, sre, alice
):
    _hook(sre.agent, "echo one")
    keep = ConfigRevision.objects.filter(agent=sre.agent).order_by("-number")[0].number
    _hook(sre.agent, "echo two")
    admin_client.post("/agents/sre-agent/mode/", {"mode": "evaluate_only"})
    response = preview_then_confirm(admin_client, f"/agents/sre-agent/history/{keep}/rollback/")
    assert response.status_code == 302 and response.url == "/agents/sre-agent/history/"
    hooks = Hook.objects.filter(agent=sre.agent, custom_agent=None)
    assert [h.definition["command"] for h in hooks] == ["echo one"]
    sre.agent.refresh_from_db()
    assert sre.agent.mode == "enforce"
    latest = ConfigRevision.objects.filter(agent=sre.agent).order_by("-number")[0]
    assert latest.action == "revision.rolled_back" and latest.actor == alice
    assert f"Rolled back to revision {keep}" in admin_client.get(response.url).content.decode()


@pytest.mark.django_db
def test_roll_back_brings_a_deleted_custom_agent_back(admin_client, sre):
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    _hook(sre.agent, "echo custom", custom_agent=custom_agent)
    keep = ConfigRevision.objects.filter(agent=sre.agent).order_by("-number")[0].number
    admin_client.post("/agents/sre-agent/custom/triage/delete/")
    assert not CustomAgent.objects.filter(name="triage").exists()
    response = preview_then_confirm(admin_client, f"/agents/sre-agent/history/{keep}/rollback/")
    assert response.url == "/agents/sre-agent/custom/triage/history/"
    restored = CustomAgent.objects.get(agent=sre.agent, name="triage")
    assert [h.definition["command"] for h in Hook.objects.filter(custom_agent=restored)] == [
        "echo custom"
    ]


@pytest.mark.django_db
def test_rollback_needs_post_and_an_existing_revision(admin_client, sre):
    number = ConfigRevision.objects.filter(agent=sre.agent)[0].number
    assert admin_client.get(f"/agents/sre-agent/history/{number}/rollback/").status_code == 405
    assert admin_client.post("/agents/sre-agent/history/9999/rollback/").status_code == 404
