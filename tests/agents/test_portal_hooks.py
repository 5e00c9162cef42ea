"""Hook rows on the Builder → Hooks page: edit, enable/disable, reorder and delete, as plain
POSTs and as htmx swaps of the hook list; each change writes a revision."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import ConfigRevision, Hook


def _hook(agent, *, event="PostToolUse", command="echo one", custom_agent=None, **extra):
    raw = {"type": "command", "command": command, **extra}
    if event != "Stop":
        raw.setdefault("matcher", "*")
    hook, _ = services.hook_create(
        actor=None, agent=agent, custom_agent=custom_agent, event=event, raw=raw
    )
    return hook


def _commands(agent, event="PostToolUse"):
    rows = Hook.objects.filter(agent=agent, custom_agent=None, event=event)
    return [hook.definition["command"] for hook in rows.order_by("position")]


@pytest.mark.django_db
def test_agent_page_lists_hooks_grouped_by_event_with_their_settings(admin_client, sre):
    _hook(sre.agent, event="Stop", command="check-done")
    _hook(sre.agent, command="audit-tools", failMode="block", timeout=45)
    html = admin_client.get("/agents/sre-agent/").content.decode()
    assert "Builder → Hooks" in html
    stop, post, pre = (html.index(f'id="event-{e}"') for e in ("Stop", "PostToolUse", "PreToolUse"))
    assert stop < html.index("check-done") < post < html.index("audit-tools") < pre
    assert "timeout 45s" in html and "block" in html
    assert "No PreToolUse hooks" in html


@pytest.mark.django_db
def test_edit_form_is_prefilled_and_saving_changes_the_hook(admin_client, sre):
    hook = _hook(sre.agent, timeout=45)
    url = f"/agents/sre-agent/hooks/{hook.key}/"
    form = admin_client.get(url).context["form"]
    assert form["timeout"].value() == 45
    assert form["command"].value() == "echo one"
    assert 'id="hook-test-panel"' in admin_client.get(url).content.decode()
    response = admin_client.post(
        url,
        {
            "name": "Bash echo",
            "mode": "disabled",
            "type": "command",
            "matcher": "Bash",
            "command": "echo two",
            "timeout": "60",
        },
    )
    assert response.status_code == 302
    hook.refresh_from_db()
    assert hook.definition["command"] == "echo two"
    assert hook.definition["timeout"] == 60
    assert hook.event == "PostToolUse"
    assert (hook.name, hook.enabled, hook.mode) == ("Bash echo", False, "enforce")


@pytest.mark.django_db
def test_edit_cannot_move_a_hook_to_another_event(admin_client, sre):
    hook = _hook(sre.agent)
    admin_client.post(
        f"/agents/sre-agent/hooks/{hook.key}/",
        {"name": "x", "event": "Stop", "type": "command", "matcher": "*", "command": "x"},
    )
    hook.refresh_from_db()
    assert hook.event == "PostToolUse"


@pytest.mark.django_db
def test_invalid_edit_changes_nothing(admin_client, sre):
    hook = _hook(sre.agent)
    before = ConfigRevision.objects.count()
    response = admin_client.post(
        f"/agents/sre-agent/hooks/{hook.key}/",
        {"type": "command", "matcher": "*", "command": "x", "timeout": "999"},
    )
    assert "timeout" in response.context["form"].errors
    hook.refresh_from_db()
    assert hook.definition["command"] == "echo one"
    assert ConfigRevision.objects.count() == before


@pytest.mark.django_db
def test_disable_and_enable_with_plain_posts(admin_client, sre):
    hook = _hook(sre.agent)
    url = f"/agents/sre-agent/hooks/{hook.key}/enabled/"
    response = admin_client.post(url, {"enabled": "0"})
    assert response.status_code == 302 and response.url == "/agents/sre-agent/"
    hook.refresh_from_db()
    assert not hook.enabled
    admin_client.post(url, {"enabled": "1"})
    hook.refresh_from_db()
    assert hook.enabled
    actions = ConfigRevision.objects.filter(agent=sre.agent).values_list("action", flat=True)
    assert {"hook.disabled", "hook.enabled"} <= set(actions)


@pytest.mark.django_db
def test_htmx_disable_swaps_the_hook_list_in_place(admin_client, sre):
    hook = _hook(sre.agent)
    response = admin_client.post(
        f"/agents/sre-agent/hooks/{hook.key}/enabled/", {"enabled": "0"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="hooks"')
    assert "<html" not in html
    assert 'class="badge disabled">disabled' in html


@pytest.mark.django_db
def test_move_down_and_up_reorders_within_the_event(admin_client, sre):
    first = _hook(sre.agent, command="first")
    _hook(sre.agent, command="second")
    third = _hook(sre.agent, command="third")
    admin_client.post(f"/agents/sre-agent/hooks/{first.key}/move/", {"direction": "down"})
    assert _commands(sre.agent) == ["second", "first", "third"]
    admin_client.post(
        f"/agents/sre-agent/hooks/{third.key}/move/", {"direction": "up"}, HTTP_HX_REQUEST="true"
    )
    assert _commands(sre.agent) == ["second", "third", "first"]


@pytest.mark.django_db
def test_delete_removes_the_hook_and_closes_the_gap(admin_client, sre):
    first = _hook(sre.agent, command="first")
    _hook(sre.agent, command="second")
    response = admin_client.post(f"/agents/sre-agent/hooks/{first.key}/delete/")
    assert response.status_code == 302
    assert _commands(sre.agent) == ["second"]
    assert Hook.objects.get(agent=sre.agent).position == 0


@pytest.mark.django_db
def test_row_actions_refuse_get(admin_client, sre):
    hook = _hook(sre.agent)
    for action in ("enabled", "move", "delete"):
        assert admin_client.get(f"/agents/sre-agent/hooks/{hook.key}/{action}/").status_code == 405
    assert Hook.objects.filter(pk=hook.pk, enabled=True).exists()


@pytest.mark.django_db
def test_a_hook_is_not_reachable_through_another_agents_url(admin_client, sre, other):
    hook = _hook(other.agent)
    assert admin_client.get(f"/agents/sre-agent/hooks/{hook.key}/").status_code == 404
    response = admin_client.post(f"/agents/sre-agent/hooks/{hook.key}/delete/")
    assert response.status_code == 404
    assert Hook.objects.filter(pk=hook.pk).exists()


@pytest.mark.django_db
def test_custom_agent_hook_actions_return_to_the_custom_agent_page(admin_client, sre):
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    hook = _hook(sre.agent, custom_agent=custom_agent)
    response = admin_client.post(f"/agents/sre-agent/hooks/{hook.key}/enabled/", {"enabled": "0"})
    assert response.url == "/agents/sre-agent/custom/triage/"
    page = admin_client.get("/agents/sre-agent/custom/triage/").content.decode()
    assert "Manage hooks" in page and hook.key in page
    assert hook.key not in admin_client.get("/agents/sre-agent/").content.decode()
