"""Hooks have human names (unique per scope, case-insensitively), a description and a mode:
the v2 document and the agent-level API round-trip them, documents without names get
derived ones, and a taken name is a 400 naming the field with nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.test import Client

from agents import services
from agents.models import ConfigRevision, CustomAgent, Hook
from console.errors import InvalidInput
from demo.documents import SEED_CUSTOM_AGENT_YAML

URL = "/api/v2/extendedAgent/agents/guarded"
HOOKS_URL = "/api/v1/agent/hooks"
PY = '#!/usr/bin/env python3\nprint("{}")\n'


def _document(hooks: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": "guarded"},
        "spec": {"hooks": hooks},
    }


def _put(agent: Any, document: dict[str, Any]) -> Any:
    return Client().put(
        URL, json.dumps(document), content_type="application/json", **agent.headers()
    )


def _command(matcher: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "matcher": matcher, "script": PY, **extra}


@pytest.mark.django_db
def test_name_description_and_mode_round_trip_through_yaml(sre):
    hook = _command(
        "restart_service",
        name="Restart guard",
        description="Blocks restarts during the freeze.",
        mode="shadow",
        enabled=False,
    )
    assert _put(sre, _document({"PreToolUse": [hook]})).status_code == 201
    got = yaml.safe_load(Client().get(URL, HTTP_ACCEPT="application/yaml", **sre.headers()).content)
    stored = got["spec"]["hooks"]["PreToolUse"][0]
    assert list(stored)[:2] == ["name", "description"]
    assert stored["name"] == "Restart guard"
    assert stored["description"] == "Blocks restarts during the freeze."
    assert stored["mode"] == "shadow" and stored["enabled"] is False
    row = Hook.objects.get()
    assert (row.name, row.mode, row.enabled, row.run_mode) == (
        "Restart guard",
        "shadow",
        False,
        "disabled",
    )
    assert "name" not in row.definition and "mode" not in row.definition


@pytest.mark.django_db
def test_the_seed_document_without_names_stays_valid_and_gets_derived_names(sre):
    response = Client().put(
        URL.replace("guarded", "my_hooked_agent"),
        SEED_CUSTOM_AGENT_YAML,
        content_type="application/yaml",
        **sre.headers(),
    )
    assert response.status_code == 201, response.content
    names = sorted(Hook.objects.values_list("name", flat=True))
    assert names == ["PostToolUse Bash|ExecuteShellCommand", "Stop prompt"]


@pytest.mark.django_db
def test_derived_names_are_numbered_and_avoid_given_names(sre):
    hooks = {
        "PostToolUse": [
            _command("restart_service"),
            _command("restart_service"),
            _command("*", name="PostToolUse restart_service 3"),
        ]
    }
    assert _put(sre, _document(hooks)).status_code == 201
    got = Client().get(URL, **sre.headers()).json()["spec"]["hooks"]["PostToolUse"]
    assert [hook["name"] for hook in got] == [
        "PostToolUse restart_service",
        "PostToolUse restart_service 2",
        "PostToolUse restart_service 3",
    ]


@pytest.mark.django_db
def test_a_name_used_twice_in_a_document_is_a_400_naming_the_second(sre):
    hooks = {
        "Stop": [{"type": "prompt", "prompt": "ok?", "name": "Guard"}],
        "PostToolUse": [_command("*", name="guard ")],
    }
    response = _put(sre, _document(hooks))
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["/spec/hooks/PostToolUse/0/name"]
    assert "already used" in fields["/spec/hooks/PostToolUse/0/name"][0]
    assert "/spec/hooks/Stop/0" in fields["/spec/hooks/PostToolUse/0/name"][0]
    assert not CustomAgent.objects.exists() and not Hook.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("name", "", "non-empty"),
        ("name", "x" * 81, "limit is 80"),
        ("name", "two\nlines", "one line"),
        ("name", "hk_0123abcd4567", "hook key"),
        ("description", "d" * 1001, "limit is 1000"),
        ("description", 7, "must be a string"),
        ("mode", "disabled", "enabled: false"),
        ("mode", "Shadow", "'enforce' or 'shadow'"),
    ],
)
def test_bad_identity_fields_are_400_naming_the_field(sre, field, value, fragment):
    response = _put(sre, _document({"PreToolUse": [_command("*", **{field: value})]}))
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert fragment in fields[f"/spec/hooks/PreToolUse/0/{field}"][0]


@pytest.mark.django_db
def test_agent_level_api_refuses_a_duplicate_name_with_the_pointer(sre):
    body = {"hooks": {"PostToolUse": [_command("a", name="Same"), _command("b", name="SAME")]}}
    response = Client().put(
        HOOKS_URL, json.dumps(body), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/hooks/PostToolUse/1/name"]
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_the_same_name_may_be_used_in_another_scope(sre):
    services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw=_command("*", name="Guard"),
    )
    assert _put(sre, _document({"PreToolUse": [_command("*", name="Guard")]})).status_code == 201
    assert Hook.objects.filter(name="Guard").count() == 2


@pytest.mark.django_db
def test_hook_create_with_a_taken_name_is_refused_before_any_write(sre):
    services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="Stop",
        raw={"prompt": "ok?", "name": "Guard"},
    )
    revisions = ConfigRevision.objects.count()
    with pytest.raises(InvalidInput) as refused:
        services.hook_create(
            actor=None,
            agent=sre.agent,
            custom_agent=None,
            event="PreToolUse",
            raw=_command("*", name="guard"),
        )
    assert list(refused.value.fields) == ["/name"]
    assert Hook.objects.count() == 1 and ConfigRevision.objects.count() == revisions


@pytest.mark.django_db
def test_hook_update_may_keep_its_own_name_but_not_take_another(sre):
    first, _ = services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="Stop",
        raw={"prompt": "a", "name": "A"},
    )
    services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="Stop",
        raw={"prompt": "b", "name": "B"},
    )
    updated, _ = services.hook_update(
        actor=None, hook=first, raw={"prompt": "a2", "name": "a", "mode": "shadow"}
    )
    assert (updated.name, updated.mode) == ("a", "shadow")
    with pytest.raises(InvalidInput) as refused:
        services.hook_update(actor=None, hook=first, raw={"prompt": "a3", "name": "b"})
    assert list(refused.value.fields) == ["/name"]
    first.refresh_from_db()
    assert first.definition["prompt"] == "a2"


@pytest.mark.django_db
def test_a_created_hook_without_a_name_gets_one_unique_in_its_scope(sre):
    for _ in range(2):
        services.hook_create(
            actor=None,
            agent=sre.agent,
            custom_agent=None,
            event="PreToolUse",
            raw=_command("deploy"),
        )
    names = list(Hook.objects.order_by("position").values_list("name", flat=True))
    assert names == ["PreToolUse deploy", "PreToolUse deploy 2"]


@pytest.mark.django_db
def test_a_replacement_keeps_each_named_hooks_key_across_a_reorder(sre):
    first = {"PreToolUse": [_command("a", name="Alpha"), _command("b", name="Beta")]}
    assert _put(sre, _document(first)).status_code == 201
    keys = dict(Hook.objects.values_list("name", "key"))
    swapped = {"PreToolUse": [_command("b", name="Beta"), _command("a2", name="Alpha")]}
    assert _put(sre, _document(swapped)).status_code == 200
    assert dict(Hook.objects.values_list("name", "key")) == keys
    renamed = {"PreToolUse": [_command("b", name="Beta"), _command("a2", name="Alpha v2")]}
    assert _put(sre, _document(renamed)).status_code == 200
    # A renamed hook keeps the key of the hook in its slot when no name claimed that key.
    assert Hook.objects.get(name="Alpha v2").key == keys["Alpha"]
    assert Hook.objects.get(name="Beta").key == keys["Beta"]
