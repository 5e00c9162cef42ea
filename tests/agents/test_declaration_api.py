"""GET /api/v1/declaration: the effective agent-hooks-declaration/1.0 of an agent."""

from __future__ import annotations

import pytest
import yaml
from agent_hooks import InterceptionEmitter, InterceptionPoint
from django.test import Client

from agents import services
from agents.models import Hook, Mode
from console_client.client import console_registry
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    DEMO_APPROVAL_HOOK,
    SEED_CUSTOM_AGENT_YAML,
)

URL = "/api/v1/declaration"


def _seed_agent_level(agent) -> None:
    hooks = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]
    hooks.update(yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"])
    hooks["PreToolUse"] = [DEMO_APPROVAL_HOOK]
    services.agent_hooks_replace(actor=None, agent=agent, document={"hooks": hooks})


def _seed_custom_agent(agent) -> None:
    services.custom_agent_put(
        actor=None,
        agent=agent,
        name="my_hooked_agent",
        document=yaml.safe_load(SEED_CUSTOM_AGENT_YAML),
    )


@pytest.fixture
def seeded(sre):
    _seed_agent_level(sre.agent)
    _seed_custom_agent(sre.agent)
    sre.agent.refresh_from_db()
    return sre


@pytest.mark.django_db
def test_document_loads_with_the_sdk_loader_and_the_console_registry(seeded):
    response = Client().get(URL, {"custom_agent": "my_hooked_agent"}, **seeded.headers())
    assert response.status_code == 200
    document = response.json()
    emitter = InterceptionEmitter.from_declaration_value(document, console_registry())
    resolved = emitter.declaration
    assert resolved is not None
    assert resolved.configuration["approval"]["resolver"] == "console"
    assert [binding.kind for binding in resolved.bindings] == [
        "console.base",
        "console.command",  # agent level: Stop
        "console.command",  # agent level: PostToolUse audit
        "console.approval",  # agent level: PreToolUse
        "console.prompt",  # custom agent: Stop
        "console.command",  # custom agent: PostToolUse
    ]
    assert resolved.bindings[0].at == frozenset(InterceptionPoint)


@pytest.mark.django_db
def test_agent_level_bindings_come_first_with_hook_keys_as_ids(seeded):
    document = Client().get(URL, {"custom_agent": "my_hooked_agent"}, **seeded.headers()).json()
    agent_keys = [
        hook.key
        for hook in sorted(
            Hook.objects.filter(agent=seeded.agent, custom_agent=None),
            key=lambda h: (["Stop", "PostToolUse", "PreToolUse"].index(h.event), h.position),
        )
    ]
    custom_keys = list(
        Hook.objects.filter(agent=seeded.agent, custom_agent__name="my_hooked_agent")
        .order_by("position")
        .values_list("key", flat=True)
    )
    ids = [binding["id"] for binding in document["bindings"]]
    assert ids[0] == "console-base"
    assert ids[1:4] == agent_keys
    assert set(ids[4:]) == set(custom_keys)
    points = {binding["id"]: binding.get("at") for binding in document["bindings"]}
    assert points[agent_keys[0]] == ["output"]
    assert points[agent_keys[1]] == ["post_tool_call"]
    assert points[agent_keys[2]] == ["pre_tool_call"]


@pytest.mark.django_db
def test_binding_config_is_the_hook_definition_and_timeouts_follow_the_hooks(seeded):
    document = Client().get(URL, **seeded.headers()).json()
    audit = Hook.objects.get(agent=seeded.agent, custom_agent=None, event="PostToolUse")
    binding = next(b for b in document["bindings"] if b["id"] == audit.key)
    assert binding["config"] == {**audit.definition, "mode": "enforce", "name": audit.name}
    assert binding["timeout_ms"] == 30_000 + 5_000
    timeouts = document["configuration"]["timeouts"]
    assert timeouts["interceptor_ms"] == 35_000
    assert timeouts["approval_resolver_ms"] == 600_000 + 30_000


@pytest.mark.django_db
def test_without_custom_agent_only_agent_level_hooks_are_bound(seeded):
    document = Client().get(URL, **seeded.headers()).json()
    assert len(document["bindings"]) == 4
    assert document["extensions"]["console"]["custom_agent"] is None


@pytest.mark.django_db
def test_disabled_hooks_are_left_out(seeded):
    hook = Hook.objects.get(agent=seeded.agent, custom_agent=None, event="PreToolUse")
    services.hook_set_enabled(actor=None, hook=hook, enabled=False)
    document = Client().get(URL, **seeded.headers()).json()
    assert hook.key not in [binding["id"] for binding in document["bindings"]]


@pytest.mark.django_db
def test_mode_comes_from_the_agent(seeded):
    services.agent_set_mode(actor=None, agent=seeded.agent, mode=Mode.EVALUATE_ONLY)
    document = Client().get(URL, **seeded.headers()).json()
    assert document["configuration"]["mode"] == "evaluate_only"
    emitter = InterceptionEmitter.from_declaration_value(document, console_registry())
    assert emitter.mode.value == "evaluate_only"


@pytest.mark.django_db
def test_extensions_carry_agent_revision_and_digest_equal_to_the_etag(seeded):
    response = Client().get(URL, {"custom_agent": "my_hooked_agent"}, **seeded.headers())
    console = response.json()["extensions"]["console"]
    assert console["agent"] == "sre-agent"
    assert console["custom_agent"] == "my_hooked_agent"
    assert console["revision"] == seeded.agent.revision
    assert response["ETag"] == f'"{console["digest"]}"'
    assert len(console["digest"]) == 64


@pytest.mark.django_db
def test_if_none_match_with_the_current_etag_is_304(seeded):
    client = Client()
    first = client.get(URL, **seeded.headers())
    again = client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"], **seeded.headers())
    assert again.status_code == 304
    assert again.content == b""


@pytest.mark.django_db
def test_a_configuration_change_changes_the_etag(seeded):
    client = Client()
    first = client.get(URL, **seeded.headers())
    hook = Hook.objects.get(agent=seeded.agent, custom_agent=None, event="PreToolUse")
    services.hook_update(
        actor=None, hook=hook, raw={**hook.definition, "matcher": "restart_service"}
    )
    again = client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"], **seeded.headers())
    assert again.status_code == 200
    assert again["ETag"] != first["ETag"]


@pytest.mark.django_db
def test_unknown_custom_agent_is_404(seeded):
    response = Client().get(URL, {"custom_agent": "nope"}, **seeded.headers())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_another_agents_token_cannot_read_this_agents_custom_agent(seeded, other):
    response = Client().get(URL, {"custom_agent": "my_hooked_agent"}, **other.headers())
    assert response.status_code == 404
    own = Client().get(URL, **other.headers()).json()
    assert own["extensions"]["console"]["agent"] == "other-agent"
    assert [binding["id"] for binding in own["bindings"]] == ["console-base"]


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["admin_client", "reviewer_client", "auditor_client"])
def test_people_sessions_are_refused(persona, request, seeded):
    client = request.getfixturevalue(persona)
    assert client.get(URL).status_code == 403


@pytest.mark.django_db
def test_anonymous_is_refused(seeded):
    assert Client().get(URL).status_code in (401, 403)


@pytest.mark.django_db
def test_a_shadow_hook_carries_its_mode_in_its_binding_config_and_disabled_hooks_are_left_out(
    seeded,
):
    hooks = Hook.objects.filter(agent=seeded.agent, custom_agent=None)
    shadow = hooks.get(event="PostToolUse")
    services.hook_update(
        actor=None, hook=shadow, raw={**shadow.definition, "name": shadow.name, "mode": "shadow"}
    )
    stop = hooks.get(event="Stop")
    services.hook_set_enabled(actor=None, hook=stop, enabled=False)
    document = Client().get(URL, **seeded.headers()).json()
    configs = {binding["id"]: binding["config"] for binding in document["bindings"]}
    assert configs[shadow.key]["mode"] == "shadow"
    assert stop.key not in configs
