"""The health strip (agents.health): problems of one scope's hooks an admin should know now."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agents import services
from agents.health import scope_health
from agents.models import Hook
from tests.audit.record_wires import GUARD_HOOK, items, sdk_session
from tests.runtimes.runtime_support import CLAUDE_POST, post_hook

JUDGE_ENV = ("CONSOLE_LLM_BASE_URL", "CONSOLE_LLM_API_KEY", "CONSOLE_LLM_MODELS")


@pytest.fixture
def no_judge(monkeypatch):
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def judge(monkeypatch):
    monkeypatch.setenv("CONSOLE_LLM_BASE_URL", "http://127.0.0.1:9/v1")


def _hook(agent, event, custom_agent=None, **raw):
    hook, _ = services.hook_create(
        actor=None, agent=agent, custom_agent=custom_agent, event=event, raw=raw
    )
    return hook


def _messages(agent, custom_agent=None):
    return [(item.level, item.hook.key, item.message) for item in scope_health(agent, custom_agent)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fail_mode", "level", "effect"),
    [
        ("allow", "warning", "fails open: tool results pass unchecked"),
        ("block", "error", "fails closed: every matching tool result is blocked"),
    ],
)
def test_a_prompt_hook_without_a_judge_says_whether_it_fails_open_or_closed(
    sre, no_judge, fail_mode, level, effect
):
    hook = _hook(sre.agent, "PostToolUse", matcher="*", prompt="Safe?", failMode=fail_mode)
    (item,) = scope_health(sre.agent, None)
    assert (item.level, item.hook.key) == (level, hook.key)
    assert "CONSOLE_LLM_BASE_URL is not set" in item.message and effect in item.message


@pytest.mark.django_db
def test_a_configured_judge_raises_nothing(sre, judge):
    _hook(sre.agent, "Stop", prompt="Done?")
    assert scope_health(sre.agent, None) == []


@pytest.mark.django_db
def test_a_disabled_prompt_hook_is_not_reported_for_the_judge(sre, no_judge):
    _hook(sre.agent, "Stop", prompt="Done?", enabled=False)
    assert scope_health(sre.agent, None) == []


@pytest.mark.django_db
def test_an_empty_matcher_never_runs_and_a_stop_matcher_has_no_effect(sre, judge):
    empty = _hook(sre.agent, "PostToolUse", type="command", matcher="", command="exit 0")
    stop = _hook(sre.agent, "Stop", type="command", matcher="Bash", command="exit 0")
    found = _messages(sre.agent)
    assert ("warning", empty.key, "Never runs: an empty or null matcher matches no tool.") in found
    assert ("warning", stop.key, "matcher has no effect on Stop hooks.") in found


@pytest.mark.django_db
def test_fields_that_do_not_apply_to_the_hook_are_named(sre, judge):
    hook = _hook(sre.agent, "PostToolUse", type="command", matcher="*", command="exit 0")
    # Stored before today's rules: approvalsRequired on a command hook.
    Hook.objects.filter(pk=hook.pk).update(
        definition={**hook.definition, "approvalsRequired": 2, "maxRejections": 4}
    )
    found = _messages(sre.agent)
    assert (
        "error",
        hook.key,
        "No longer valid: approvalsRequired is not valid for command hooks.",
    ) in found
    assert found[0][0] == "error"  # errors first


@pytest.mark.django_db
def test_the_last_error_of_a_hook_comes_from_its_records(sre, judge):
    failing = _hook(
        sre.agent, "PostToolUse", type="command", matcher="*", command="echo boom >&2; exit 1"
    )
    fine = _hook(sre.agent, "Stop", type="command", command="exit 0")
    assert post_hook(Client(), sre, "claude-code", CLAUDE_POST).status_code == 200
    items_ = scope_health(sre.agent, None)
    (item,) = [i for i in items_ if i.hook.key == failing.key]
    assert item.message.startswith("Last error ") and "after Bash" in item.message
    assert "failMode decided" in item.message and "several" not in item.message
    assert item.record_id is not None
    assert not [i for i in items_ if i.hook.key == fine.key]


@pytest.mark.django_db
def test_of_several_hooks_that_ran_only_the_one_that_failed_gets_the_error(sre, judge):
    # Each hook's own verdict carries its warning reason, so the record says which one failed.
    fine, failing = (
        _hook(sre.agent, "PostToolUse", type="command", matcher="*", command=command)
        for command in ("exit 0", "exit 1")
    )
    post_hook(Client(), sre, "claude-code", CLAUDE_POST)
    found = [(i.hook.key, i.message) for i in scope_health(sre.agent, None)]
    assert [key for key, _message in found] == [failing.key]
    assert "records do not say which" not in found[0][1]


@pytest.mark.django_db
def test_a_host_error_is_attributed_to_the_hook_the_record_names(sre, judge):
    hook = _hook(sre.agent, "PreToolUse", type="command", matcher="*", command="exit 0")
    Hook.objects.filter(pk=hook.pk).update(key=GUARD_HOOK)
    body = json.dumps(items(sdk_session(["crash"])))
    response = Client().post(
        "/api/v1/records", data=body, content_type="application/json", **sre.headers()
    )
    assert response.status_code in (200, 201, 202), response.content
    (item,) = scope_health(sre.agent, None)
    assert item.hook.key == GUARD_HOOK and "host failed running it (host_error:" in item.message


@pytest.mark.django_db
def test_the_agent_page_and_the_custom_agent_page_show_the_strip(admin_client, sre, no_judge):
    _hook(sre.agent, "Stop", prompt="Done?", failMode="block")
    html = admin_client.get("/agents/sre-agent/").content.decode()
    assert 'id="health-strip"' in html and "fails closed" in html
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    _hook(
        sre.agent, "PostToolUse", custom_agent=custom_agent, type="command", matcher="", command="x"
    )
    page = admin_client.get("/agents/sre-agent/custom/triage/").content.decode()
    assert "Never runs" in page and "fails closed" not in page


@pytest.mark.django_db
def test_a_row_action_over_htmx_updates_the_strip_out_of_band(admin_client, sre, no_judge):
    hook = _hook(sre.agent, "Stop", prompt="Done?")
    response = admin_client.post(
        f"/agents/sre-agent/hooks/{hook.key}/enabled/", {"enabled": "0"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert 'id="health-strip"' in html and 'hx-swap-oob="true"' in html
    assert "No known problems" in html


@pytest.mark.django_db
def test_a_custom_agents_hook_error_is_not_blamed_on_an_agent_level_hook(sre, judge):
    # Found trying the console as an admin: the agent page said the agent-level hook failed,
    # linking a record whose failing hook was the custom agent's.
    fine = _hook(sre.agent, "PostToolUse", type="command", matcher="*", command="exit 0")
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    failing = _hook(
        sre.agent, "PostToolUse", custom_agent=custom_agent, type="command", matcher="*",
        command="exit 1",
    )  # fmt: skip
    response = post_hook(Client(), sre, "claude-code", CLAUDE_POST, query="?custom_agent=triage")
    assert response.status_code == 200, response.content
    assert [i.hook.key for i in scope_health(sre.agent, None)] == []
    assert [i.hook.key for i in scope_health(sre.agent, custom_agent)] == [failing.key]
    assert fine.key != failing.key
