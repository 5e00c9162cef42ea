"""A hook's "record its reason" opt-in (recordReason, off by default): in documents and the
API as a console-side identity key like `mode`, in the hook form as a checkbox with the
payload trade-off spelled out, in the declaration the agent side loads, and in the
governance trail (who turned it on, the change before/after)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents import services
from agents.models import Hook
from console.governance.models import GovernanceEvent

URL = "/api/v1/agent/hooks"
GUARD = {"name": "guard", "type": "command", "matcher": "Bash", "command": "exit 0"}


def _put(client: Client, body: Any, **headers: str) -> Any:
    return client.put(URL, json.dumps(body), content_type="application/json", **headers)


@pytest.mark.django_db
def test_off_by_default_and_absent_from_documents(sre):
    assert _put(Client(), {"hooks": {"PreToolUse": [GUARD]}}, **sre.headers()).status_code == 200
    hook = Hook.objects.get(agent=sre.agent)
    assert hook.record_reason is False and hook.record_reason_by == ""
    # Documents of hooks that did not opt in are unchanged (no new key written).
    assert "recordReason" not in Client().get(URL, **sre.headers()).json()["hooks"]["PreToolUse"][0]
    declaration = Client().get("/api/v1/declaration", **sre.headers()).json()
    config = next(b["config"] for b in declaration["bindings"] if b["id"] == hook.key)
    assert "recordReason" not in config


@pytest.mark.django_db
def test_the_api_opts_a_hook_in_and_the_declaration_says_so(sre):
    body = {"hooks": {"PreToolUse": [{**GUARD, "recordReason": True}]}}
    assert _put(Client(), body, **sre.headers()).status_code == 200
    hook = Hook.objects.get(agent=sre.agent)
    assert hook.record_reason is True
    assert Client().get(URL, **sre.headers()).json()["hooks"]["PreToolUse"][0]["recordReason"]
    declaration = Client().get("/api/v1/declaration", **sre.headers()).json()
    config = next(b["config"] for b in declaration["bindings"] if b["id"] == hook.key)
    assert config["recordReason"] is True
    # A document that names the hook again keeps who opted it in.
    services.agent_hooks_replace(actor=None, agent=sre.agent, document=body)
    assert Hook.objects.get(agent=sre.agent).record_reason is True


@pytest.mark.django_db
def test_a_non_boolean_is_refused_naming_the_field(sre):
    body = {"hooks": {"PreToolUse": [{**GUARD, "recordReason": "yes"}]}}
    response = _put(Client(), body, **sre.headers())
    assert response.status_code == 400
    assert "/hooks/PreToolUse/0/recordReason" in response.json()["error"]["fields"]
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_an_approval_hook_is_warned_that_it_has_no_reason(sre):
    hook, warnings = services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw={"type": "approval", "matcher": "deploy", "recordReason": True},
    )
    assert "/recordReason" in warnings


@pytest.mark.django_db
def test_the_form_opts_in_with_the_trade_off_shown_and_a_governance_event(admin_client, sre):
    page = admin_client.get("/agents/sre-agent/hooks/new/").content.decode()
    assert 'name="recordReason"' in page
    assert "Payload trade-off" in page and "Off by default" in page
    data = {
        "name": "guard",
        "mode": "enforce",
        "event": "PreToolUse",
        "type": "command",
        "matcher": "Bash",
        "command": "exit 0",
    }
    assert admin_client.post("/agents/sre-agent/hooks/new/", data).status_code == 302
    hook = Hook.objects.get(agent=sre.agent)
    assert hook.record_reason is False
    edit = f"/agents/sre-agent/hooks/{hook.key}/"
    assert admin_client.post(edit, {**data, "recordReason": "on"}).status_code == 302
    hook.refresh_from_db()
    assert hook.record_reason is True and hook.record_reason_by == "alice"
    event = GovernanceEvent.objects.filter(action="hook.updated").latest("pk")
    assert event.actor_label == "alice"
    assert "recordReason" in json.dumps(event.changes)
    # The edit form shows it checked; unchecking turns it off and keeps who opted it in.
    assert "checked" in admin_client.get(edit).content.decode().split('name="recordReason"')[1][:80]
    assert admin_client.post(edit, data).status_code == 302
    hook.refresh_from_db()
    assert hook.record_reason is False and hook.record_reason_by == "alice"
