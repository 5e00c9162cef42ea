"""Saved samples of a hook and the suite that re-runs them on the definition being edited."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.hook_samples import SAMPLES_MAX, hook_sample_save
from agents.hook_testing import sample_context
from agents.models import Hook, HookSample
from agents.services import agent_hooks_replace
from console.celery import app as celery_app
from console.errors import InvalidInput
from console.governance.models import GovernanceEvent

URL = "/agents/sre-agent/hooks/test"
HTMX = {"HTTP_HX_REQUEST": "true"}
# Blocks any command that mentions sudo (exit 2 = block with stderr as the reason).
NO_SUDO = {
    "type": "command",
    "matcher": "Bash",
    "command": "grep -q sudo && { echo 'No sudo.' >&2; exit 2; }; exit 0",
}


@pytest.fixture
def eager():
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.fixture
def hook(sre: Any) -> Hook:
    agent_hooks_replace(actor=None, agent=sre.agent, document={"hooks": {"PreToolUse": [NO_SUDO]}})
    return Hook.objects.get(agent=sre.agent)


def _bash(command: str, tool: str = "Bash") -> dict[str, Any]:
    return {
        **sample_context("PreToolUse", "sre"),
        "tool_name": tool,
        "tool_input": {"command": command},
    }


def _samples_url(hook: Hook) -> str:
    return f"/agents/sre-agent/hooks/{hook.key}/samples/"


@pytest.mark.django_db
def test_an_admin_saves_a_sample_and_the_list_comes_back(admin_client, hook):
    data = {"sample_name": "sudo", "expected": "block", "context": json.dumps(_bash("sudo ls"))}
    response = admin_client.post(_samples_url(hook), data, **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hook-test"' in body and "Saved sample sudo." in body and "<html" not in body
    assert "Run all 1 sample" in body and "sudo ls" in body  # the typed context stays
    sample = HookSample.objects.get(hook=hook)
    assert (sample.name, sample.expected) == ("sudo", "block")
    assert sample.context["tool_input"] == {"command": "sudo ls"}
    assert GovernanceEvent.objects.filter(action="hook.sample_saved").count() == 1


@pytest.mark.django_db
def test_saving_under_an_existing_name_replaces_it(admin, hook):
    hook_sample_save(actor=admin, hook=hook, name="ls", context={"a": 1}, expected="allow")
    _sample, created = hook_sample_save(
        actor=admin, hook=hook, name="ls", context={"a": 2}, expected="block"
    )
    assert not created
    assert list(HookSample.objects.values_list("expected", "context")) == [("block", {"a": 2})]


@pytest.fixture
def admin(alice: Any) -> Any:
    return alice


@pytest.mark.django_db
def test_a_bad_sample_names_each_field_and_writes_nothing(admin_client, hook):
    data = {"sample_name": "", "expected": "maybe", "context": "{oops"}
    response = admin_client.post(_samples_url(hook), data)
    assert response.status_code == 400
    assert "Sample context: not valid JSON" in response.content.decode()
    data["context"] = "[1]"
    body = admin_client.post(_samples_url(hook), data, **HTMX).content.decode()
    assert "Sample name: Name the sample." in body
    assert "Expected verdict: Expected verdict must be one of" in body
    assert "Sample context: The sample context must be a JSON object." in body
    assert not HookSample.objects.exists()
    assert not GovernanceEvent.objects.filter(action="hook.sample_saved").exists()


@pytest.mark.django_db
def test_a_hook_keeps_a_bounded_number_of_samples(admin, hook):
    HookSample.objects.bulk_create(
        HookSample(hook=hook, name=f"s{i}", context={}, expected="allow")
        for i in range(SAMPLES_MAX)
    )
    with pytest.raises(InvalidInput) as failed:
        hook_sample_save(actor=admin, hook=hook, name="one more", context={}, expected="allow")
    assert "/name" in failed.value.fields
    # Replacing one of them is still allowed.
    hook_sample_save(actor=admin, hook=hook, name="s0", context={}, expected="block")


@pytest.mark.django_db
def test_without_javascript_saving_redirects_back_to_the_test_page(admin_client, hook):
    data = {"sample_name": "ls", "expected": "allow", "context": json.dumps(_bash("ls"))}
    response = admin_client.post(_samples_url(hook), data)
    assert response.status_code == 302
    assert response["Location"] == f"{URL}?hook={hook.key}"
    page = admin_client.get(response["Location"]).content.decode()
    assert "Saved sample ls." in page and "Run all 1 sample" in page


@pytest.mark.django_db
def test_a_saved_sample_loads_into_the_panel_and_can_be_deleted(admin_client, admin, hook):
    sample, _ = hook_sample_save(
        actor=admin, hook=hook, name="ls", context=_bash("ls -la /srv"), expected="allow"
    )
    panel = admin_client.get(URL, {"hook": hook.key, "sample": sample.pk}, **HTMX)
    assert "ls -la /srv" in panel.content.decode()
    delete = f"{_samples_url(hook)}{sample.pk}/delete/"
    response = admin_client.post(delete, **HTMX)
    assert "Deleted sample ls." in response.content.decode()
    assert not HookSample.objects.exists()
    assert admin_client.post(delete).status_code == 404


@pytest.mark.django_db
def test_another_agents_hook_samples_are_not_reachable(admin_client, admin, hook, other):
    sample, _ = hook_sample_save(actor=admin, hook=hook, name="x", context={}, expected="allow")
    foreign = f"/agents/{other.agent.slug}/hooks/{hook.key}/samples/{sample.pk}/delete/"
    assert admin_client.post(foreign).status_code == 404
    assert HookSample.objects.exists()


@pytest.mark.django_db
def test_the_suite_runs_every_sample_on_the_edited_definition(admin_client, admin, hook, eager):
    for name, command, tool, expected in [
        ("sudo", "sudo rm -rf /", "Bash", "block"),
        ("plain ls", "ls", "Bash", "allow"),
        ("other tool", "sudo", "Read", "not_run"),
    ]:
        hook_sample_save(
            actor=admin, hook=hook, name=name, context=_bash(command, tool), expected=expected
        )
    fields = {**NO_SUDO, "event": "PreToolUse", "hook": hook.key, "suite": "1", "context": ""}
    body = admin_client.post(URL, fields, **HTMX).content.decode()
    assert "All 3 samples still give the expected verdict." in body
    assert body.count('data-passed="yes"') == 3

    # An edit that no longer blocks sudo: the suite says which sample changed.
    edited = {**fields, "command": "exit 0"}
    body = admin_client.post(URL, edited, **HTMX).content.decode()
    assert "2 of 3 samples give the expected verdict." in body
    assert 'data-sample="sudo" data-passed="no"' in body
    assert HookSample.objects.count() == 3  # nothing saved by running
    assert Hook.objects.get(pk=hook.pk).definition["command"] == NO_SUDO["command"]


@pytest.mark.django_db
def test_the_suite_needs_saved_samples(admin_client, hook):
    fields = {**NO_SUDO, "event": "PreToolUse", "hook": hook.key, "suite": "1"}
    body = admin_client.post(URL, fields, **HTMX).content.decode()
    assert "This hook has no saved samples yet." in body
