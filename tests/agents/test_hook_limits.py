"""Limits on hook configuration (issue 9 §5): hooks per event and scope, custom agents per
agent, the size of a document once its YAML aliases are expanded, and the size of every text
field. Each is refused with 400 (or a form error) naming the field, and nothing is written,
through every way in: REST v2, /api/v1/agent/hooks, the YAML editor, import and the forms."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from agents import services
from agents.models import ConfigRevision, CustomAgent, Hook
from agents.validation import (
    CUSTOM_AGENTS_MAX,
    HANDOFF_DESCRIPTION_MAX_BYTES,
    HOOKS_PER_EVENT_MAX,
    INSTRUCTIONS_MAX_BYTES,
    MATCHER_MAX_CHARS,
    PROMPT_MAX_BYTES,
)
from console.parsers import DOCUMENT_MAX_CHARS

pytestmark = pytest.mark.django_db

URL = "/api/v2/extendedAgent/agents/limited"
HOOKS_URL = "/api/v1/agent/hooks"


def _document(hooks: dict, **spec) -> dict:
    return {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": "limited"},
        "spec": {"instructions": "x", **spec, "hooks": hooks},
    }


def _stop_hooks(count: int) -> list[dict]:
    return [{"type": "prompt", "prompt": f"check {i}"} for i in range(count)]


def _put(sre, body: str, content_type: str = "application/json", url: str = URL):
    return Client().put(url, body, content_type=content_type, **sre.headers())


def _refused(response, pointer: str, fragment: str = "") -> None:
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert pointer in fields, fields
    assert fragment in " ".join(fields[pointer])


def _nothing_written(agent) -> None:
    assert not CustomAgent.objects.filter(agent=agent, name="limited").exists()
    assert not Hook.objects.filter(agent=agent).exists()
    assert not ConfigRevision.objects.filter(agent=agent).exclude(action="agent.created").exists()


def test_a_hundred_hooks_per_event_are_accepted_and_one_more_is_refused(sre):
    accepted = _put(sre, json.dumps(_document({"Stop": _stop_hooks(HOOKS_PER_EVENT_MAX)})))
    assert accepted.status_code == 201, accepted.content
    CustomAgent.objects.filter(agent=sre.agent).delete()
    Hook.objects.filter(agent=sre.agent).delete()
    ConfigRevision.objects.filter(agent=sre.agent).exclude(action="agent.created").delete()

    refused = _put(sre, json.dumps(_document({"Stop": _stop_hooks(HOOKS_PER_EVENT_MAX + 1)})))
    _refused(refused, "/spec/hooks/Stop", f"the limit is {HOOKS_PER_EVENT_MAX}")
    _nothing_written(sre.agent)


def test_fifty_thousand_aliased_hooks_are_refused_quickly(sre):
    aliases = ", ".join(["*h"] * 50_000)
    body = (
        "api_version: azuresre.ai/v2\nkind: ExtendedAgent\nmetadata: {name: limited}\n"
        f"spec:\n  hooks:\n    Stop: [&h {{type: prompt, prompt: hi}}, {aliases}]\n"
    )
    started = time.monotonic()
    response = _put(sre, body, "application/yaml")
    assert time.monotonic() - started < 5
    assert response.status_code == 400, response.content[:300]
    assert "aliases are expanded" in response.json()["error"]["message"]
    _nothing_written(sre.agent)


def test_agent_level_hooks_have_the_same_limit(sre):
    body = json.dumps({"hooks": {"Stop": _stop_hooks(HOOKS_PER_EVENT_MAX + 1)}})
    _refused(_put(sre, body, url=HOOKS_URL), "/hooks/Stop", "per event")
    assert not Hook.objects.filter(agent=sre.agent).exists()


def test_aliases_that_expand_past_the_document_limit_are_refused_before_storing(sre):
    # 100 hooks (within the count) sharing one 60 KB prompt: 6 MB of text once expanded.
    prompt = "p" * 60_000
    aliases = ", ".join(["*h"] * (HOOKS_PER_EVENT_MAX - 1))
    body = (
        "api_version: azuresre.ai/v2\nkind: ExtendedAgent\nmetadata: {name: limited}\n"
        f"spec:\n  hooks:\n    Stop: [&h {{type: prompt, prompt: {prompt}}}, {aliases}]\n"
    )
    assert len(prompt) * HOOKS_PER_EVENT_MAX > DOCUMENT_MAX_CHARS
    response = _put(sre, body, "application/yaml")
    assert response.status_code == 400, response.content[:300]
    assert "aliases are expanded" in response.json()["error"]["message"]
    _nothing_written(sre.agent)


@pytest.mark.parametrize(
    "body",
    [
        # merge keys that multiply at every level (flattened, they would be 10^7 pairs)
        "a0: &a0 {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v, k8: v, k9: v}\n"
        + "".join(f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 10)}]}}\n" for i in range(1, 7)),
        # the classic billion laughs, in lists
        "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9)),
        # an alias inside the node it names
        "api_version: azuresre.ai/v2\nspec: &s {hooks: {Stop: [*s]}}\n",
    ],
    ids=["merge-keys", "billion-laughs", "self-reference"],
)
def test_yaml_bombs_are_refused_by_the_loader(sre, body):
    started = time.monotonic()
    response = _put(sre, body, "application/yaml")
    assert time.monotonic() - started < 5
    assert response.status_code == 400, response.content[:300]
    message = response.json()["error"]["message"]
    assert "aliases are expanded" in message or "refers to itself" in message
    _nothing_written(sre.agent)


@pytest.mark.parametrize(
    ("event", "hook", "pointer"),
    [
        ("Stop", {"prompt": "p" * (PROMPT_MAX_BYTES + 1)}, "prompt"),
        ("Stop", {"prompt": "é" * (PROMPT_MAX_BYTES // 2 + 1)}, "prompt"),  # bytes, not chars
        (
            "PostToolUse",
            {"type": "command", "matcher": "a" * (MATCHER_MAX_CHARS + 1), "command": "true"},
            "matcher",
        ),
        ("PreToolUse", {"type": "approval", "matcher": "x|" * MATCHER_MAX_CHARS}, "matcher"),
    ],
)
def test_long_hook_fields_are_refused_by_pointer(sre, event, hook, pointer):
    response = _put(sre, json.dumps(_document({event: [hook]})))
    _refused(response, f"/spec/hooks/{event}/0/{pointer}", "the limit is")
    _nothing_written(sre.agent)
    agent_level = _put(sre, json.dumps({"hooks": {event: [hook]}}), url=HOOKS_URL)
    _refused(agent_level, f"/hooks/{event}/0/{pointer}", "the limit is")


@pytest.mark.parametrize(
    ("key", "limit"),
    [
        ("instructions", INSTRUCTIONS_MAX_BYTES),
        ("handoffDescription", HANDOFF_DESCRIPTION_MAX_BYTES),
    ],
)
def test_long_custom_agent_text_is_refused_by_pointer(sre, key, limit):
    response = _put(sre, json.dumps(_document({}, **{key: "i" * (limit + 1)})))
    _refused(response, f"/spec/{key}", "the limit is")
    _nothing_written(sre.agent)


def test_custom_agents_per_agent_are_bounded_through_the_api(sre):
    for index in range(CUSTOM_AGENTS_MAX):
        CustomAgent.objects.create(agent=sre.agent, name=f"ca-{index}")
    response = _put(sre, json.dumps(_document({"Stop": _stop_hooks(1)})))
    _refused(response, "/metadata/name", f"the limit is {CUSTOM_AGENTS_MAX}")
    _nothing_written(sre.agent)
    # Replacing one that exists is not adding one.
    document = _document({"Stop": _stop_hooks(1)})
    document["metadata"]["name"] = "ca-0"
    url = "/api/v2/extendedAgent/agents/ca-0"
    assert _put(sre, json.dumps(document), url=url).status_code == 200


def test_custom_agents_per_agent_are_bounded_in_the_portal_form(admin_client, sre):
    for index in range(CUSTOM_AGENTS_MAX):
        CustomAgent.objects.create(agent=sre.agent, name=f"ca-{index}")
    response = admin_client.post("/agents/sre-agent/custom/", {"name": "one-more"})
    assert response.status_code == 200
    assert f"the limit is {CUSTOM_AGENTS_MAX}" in response.context["form"].errors["name"][0]
    assert not CustomAgent.objects.filter(name="one-more").exists()


def test_adding_a_hook_in_the_portal_stops_at_the_limit(admin_client, sre):
    services.agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": _stop_hooks(HOOKS_PER_EVENT_MAX)}}
    )
    response = admin_client.post(
        "/agents/sre-agent/hooks/new/", {"event": "Stop", "type": "prompt", "prompt": "one more"}
    )
    assert response.status_code == 200
    assert "the limit is 100 per event" in response.context["form"].errors["event"][0]
    assert Hook.objects.filter(agent=sre.agent, event="Stop").count() == HOOKS_PER_EVENT_MAX
    # Another event of the same scope still has room.
    other = admin_client.post(
        "/agents/sre-agent/hooks/new/",
        {"event": "PostToolUse", "type": "command", "matcher": "*", "command": "true"},
    )
    assert other.status_code == 302


def test_portal_prompt_field_is_bounded(admin_client, sre):
    response = admin_client.post(
        "/agents/sre-agent/hooks/new/",
        {"event": "Stop", "type": "prompt", "prompt": "p" * (PROMPT_MAX_BYTES + 1)},
    )
    assert response.status_code == 200
    assert "the limit is" in response.context["form"].errors["prompt"][0]
    assert not Hook.objects.filter(agent=sre.agent).exists()


def test_portal_custom_agent_settings_bound_the_instructions(admin_client, sre):
    services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    response = admin_client.post(
        "/agents/sre-agent/custom/triage/settings/",
        {"instructions": "i" * (INSTRUCTIONS_MAX_BYTES + 1), "handoff_description": ""},
    )
    assert response.status_code == 200
    assert "the limit is" in response.context["form"].errors["instructions"][0]
    assert CustomAgent.objects.get(name="triage").instructions == ""


def test_yaml_editor_and_import_refuse_past_the_limits_and_save_nothing(admin_client, sre):
    services.custom_agent_create(actor=None, agent=sre.agent, name="limited")
    too_many = json.dumps(_document({"Stop": _stop_hooks(HOOKS_PER_EVENT_MAX + 1)}))
    for url in ("/agents/sre-agent/custom/limited/yaml/", "/agents/sre-agent/import/"):
        response = admin_client.post(url, {"text": too_many})
        assert response.status_code == 200
        form = response.context["form"] if "yaml" in url else response.context["import_form"]
        assert "/spec/hooks/Stop" in form.pointer_errors
        assert not Hook.objects.filter(agent=sre.agent).exists()
    bomb = "a: &a [" + ", ".join(["x"] * 100) + "]\nb: &b [" + ", ".join(["*a"] * 100) + "]\n"
    bomb += "c: [" + ", ".join(["*b"] * 100) + "]\n"
    response = admin_client.post("/agents/sre-agent/import/", {"text": bomb})
    assert response.status_code == 200
    assert "aliases are expanded" in " ".join(response.context["import_form"].non_field_errors())


def test_a_revision_too_long_to_diff_says_so_instead_of_spending_seconds(admin_client, sre):
    prompt = "line\n" * 12_000  # 60 KB, within the prompt limit
    for text in (prompt, prompt.replace("line", "edit")):
        services.agent_hooks_replace(
            actor=None, agent=sre.agent, document={"hooks": {"Stop": [{"prompt": text}]}}
        )
    number = ConfigRevision.objects.filter(agent=sre.agent).order_by("-number")[0].number
    started = time.monotonic()
    html = admin_client.get(f"/agents/sre-agent/history/{number}/").content.decode()
    assert time.monotonic() - started < 3
    assert "too long to compare line by line" in html
