"""`GET/PUT /api/v1/agent/hooks`: agent-level hooks, validated like the v2 document,
written atomically, readable only by the agent itself and admins."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.test import Client

from agents.models import ConfigRevision, Hook
from console.governance.models import GovernanceEvent
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    DEMO_APPROVAL_HOOK,
)

URL = "/api/v1/agent/hooks"


def _seed_hooks() -> dict[str, Any]:
    hooks = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]
    hooks.update(yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"])
    hooks["PreToolUse"] = [dict(DEMO_APPROVAL_HOOK)]
    return {"hooks": hooks}


def _put(client: Client, body: Any, url: str = URL, **headers: str) -> Any:
    return client.put(url, json.dumps(body), content_type="application/json", **headers)


def _counts() -> tuple[int, int, int]:
    return Hook.objects.count(), ConfigRevision.objects.count(), GovernanceEvent.objects.count()


@pytest.mark.django_db
def test_agent_without_hooks_reads_an_empty_mapping(sre):
    response = Client().get(URL, **sre.headers())
    assert response.status_code == 200
    assert response.json() == {"hooks": {}}


@pytest.mark.django_db
def test_seed_hooks_go_in_and_come_back_in_event_order(sre):
    client = Client()
    response = _put(client, _seed_hooks(), **sre.headers())
    assert response.status_code == 200, response.content
    body = client.get(URL, **sre.headers()).json()
    assert body == response.json()
    assert list(body["hooks"]) == ["Stop", "PostToolUse", "PreToolUse"]
    assert body["hooks"]["PostToolUse"][0]["matcher"] == "*"
    assert (
        body["hooks"]["PostToolUse"][0]["script"]
        == _seed_hooks()["hooks"]["PostToolUse"][0]["script"]
    )
    assert body["hooks"]["Stop"][0]["script"].startswith("#!/bin/bash\n")
    # A hook without a name is named from its event and matcher; mode defaults to enforce.
    assert body["hooks"]["PreToolUse"] == [
        {
            "name": "PreToolUse restart_service|scale_deployment",
            **DEMO_APPROVAL_HOOK,
            "mode": "enforce",
        }
    ]
    assert body["hooks"]["PostToolUse"][0]["name"] == "PostToolUse all tools"
    assert "warnings" not in body


@pytest.mark.django_db
def test_hooks_as_yaml_in_and_out(sre):
    client = Client()
    response = client.put(
        URL, yaml.safe_dump(_seed_hooks()), content_type="application/yaml", **sre.headers()
    )
    assert response.status_code == 200, response.content
    got = client.get(URL, HTTP_ACCEPT="application/yaml", **sre.headers())
    assert got["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(got.content) == response.json()


@pytest.mark.django_db
def test_invalid_hook_is_refused_with_its_pointer_and_nothing_changes(sre):
    client = Client()
    _put(client, _seed_hooks(), **sre.headers())
    stored = client.get(URL, **sre.headers()).json()
    before = _counts()
    body = _seed_hooks()
    body["hooks"]["Stop"].append({"type": "prompt", "prompt": "ok?"})
    body["hooks"]["PostToolUse"][0]["timeout"] = 301
    response = _put(client, body, **sre.headers())
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"code", "message", "fields"}
    assert error["fields"] == {
        "/hooks/PostToolUse/0/timeout": ["timeout must be between 1 and 300, got 301."]
    }
    assert _counts() == before
    assert client.get(URL, **sre.headers()).json() == stored


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"hooks": {}, "mode": "enforce"}, "/mode"),
        ({}, "/hooks"),
        ({"Stop": [{"prompt": "x"}]}, "/hooks"),
        ({"hooks": {"OnStart": []}}, "/hooks/OnStart"),
        (
            {"hooks": {"Stop": [{"type": "prompt", "prompt": "x", "retry": 1}]}},
            "/hooks/Stop/0/retry",
        ),
        ({"hooks": "Stop"}, "/hooks"),
        (["Stop"], ""),
    ],
)
def test_unknown_keys_events_and_shapes_are_refused_by_pointer(sre, body, pointer):
    response = _put(Client(), body, **sre.headers())
    assert response.status_code == 400
    assert pointer in response.json()["error"]["fields"]
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_body_without_hooks_key_removes_nothing(sre):
    client = Client()
    _put(client, _seed_hooks(), **sre.headers())
    response = _put(client, {}, **sre.headers())
    assert response.status_code == 400
    assert "hooks is required" in response.json()["error"]["fields"]["/hooks"][0]
    assert Hook.objects.filter(agent=sre.agent).count() == 3


@pytest.mark.django_db
def test_empty_hooks_mapping_removes_every_agent_level_hook(sre):
    client = Client()
    _put(client, _seed_hooks(), **sre.headers())
    response = _put(client, {"hooks": {}}, **sre.headers())
    assert response.status_code == 200
    assert response.json() == {"hooks": {}}
    assert not Hook.objects.filter(agent=sre.agent).exists()


@pytest.mark.django_db
def test_warnings_are_returned_keyed_by_pointer(sre):
    body = {"hooks": {"PostToolUse": [{"type": "command", "matcher": "", "command": "exit 0"}]}}
    response = _put(Client(), body, **sre.headers())
    assert response.status_code == 200
    assert list(response.json()["warnings"]) == ["/hooks/PostToolUse/0/matcher"]


@pytest.mark.django_db
def test_put_replaces_every_agent_level_hook_and_leaves_custom_agents_alone(sre):
    from agents import services

    services.custom_agent_create(actor=None, agent=sre.agent, name="helper")
    helper = sre.agent.custom_agents.get()
    services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=helper,
        event="Stop",
        raw={"type": "prompt", "prompt": "done?"},
    )
    client = Client()
    _put(client, _seed_hooks(), **sre.headers())
    response = _put(client, {"hooks": {"Stop": [{"prompt": "short"}]}}, **sre.headers())
    assert response.status_code == 200
    assert list(response.json()["hooks"]) == ["Stop"]
    assert Hook.objects.filter(agent=sre.agent, custom_agent=None).count() == 1
    assert Hook.objects.filter(custom_agent=helper).count() == 1


@pytest.mark.django_db
def test_disabled_hook_keeps_enabled_false(sre):
    body = {"hooks": {"Stop": [{"type": "prompt", "prompt": "x", "enabled": False}]}}
    response = _put(Client(), body, **sre.headers())
    assert response.json()["hooks"]["Stop"][0]["enabled"] is False
    assert Hook.objects.get(agent=sre.agent).enabled is False


@pytest.mark.django_db
def test_put_writes_one_revision_and_one_governance_event(sre):
    _, revisions, events = _counts()
    _put(Client(), _seed_hooks(), **sre.headers())
    assert ConfigRevision.objects.count() == revisions + 1
    assert GovernanceEvent.objects.count() == events + 1
    revision = ConfigRevision.objects.latest("number")
    assert revision.actor_label == "agent:sre-agent"
    assert revision.snapshot["hooks"] == Client().get(URL, **sre.headers()).json()["hooks"]


# Per-object permissions


@pytest.mark.django_db
def test_agent_token_only_ever_sees_its_own_hooks(sre, other):
    client = Client()
    _put(client, _seed_hooks(), **sre.headers())
    assert client.get(URL, **other.headers()).json() == {"hooks": {}}
    assert client.get(URL + "?agent=sre-agent", **other.headers()).json() == {"hooks": {}}
    _put(client, {"hooks": {}}, url=URL + "?agent=sre-agent", **other.headers())
    assert Hook.objects.filter(agent=sre.agent).count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["reviewer_client", "auditor_client", "outsider_client"])
def test_people_without_the_admin_role_get_403(request, sre, persona):
    client = request.getfixturevalue(persona)
    get = client.get(URL + "?agent=sre-agent")
    put = _put(client, _seed_hooks(), url=URL + "?agent=sre-agent")
    assert (get.status_code, put.status_code) == (403, 403)
    assert get.json()["error"]["code"] == put.json()["error"]["code"] == "forbidden"
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_reviewer_personal_token_gets_403(rita, sre):
    from console.services import api_token_issue

    token = api_token_issue(actor=None, user=rita).plaintext
    response = Client().get(URL + "?agent=sre-agent", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403


@pytest.mark.django_db
def test_anonymous_callers_get_401(sre):
    client = Client()
    assert client.get(URL + "?agent=sre-agent").status_code == 401
    assert _put(client, _seed_hooks(), url=URL + "?agent=sre-agent").status_code == 401
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_admin_reads_and_writes_hooks_with_the_agent_parameter(admin_client, sre):
    response = _put(admin_client, _seed_hooks(), url=URL + "?agent=sre-agent")
    assert response.status_code == 200, response.content
    assert admin_client.get(URL + "?agent=sre-agent").json() == response.json()
    assert ConfigRevision.objects.latest("number").actor_label == "alice"


@pytest.mark.django_db
def test_admin_without_the_agent_parameter_gets_400_naming_it(admin_client, sre):
    for response in (admin_client.get(URL), _put(admin_client, _seed_hooks())):
        assert response.status_code == 400
        assert list(response.json()["error"]["fields"]) == ["/agent"]
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_admin_naming_an_unknown_agent_gets_404(admin_client, sre):
    assert admin_client.get(URL + "?agent=ghost").status_code == 404
