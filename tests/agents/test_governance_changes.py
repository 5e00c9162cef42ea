"""The `changes` payload configuration changes store on their governance event: the same
comparison as "review before apply", written in the change's transaction."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from agents import services
from agents.governance_changes import changes_summary, diff_of_changes
from agents.models import ConfigRevision
from console.governance.models import GovernanceEvent
from demo.documents import SEED_CUSTOM_AGENT_YAML


def _last_event(action: str) -> GovernanceEvent:
    event = GovernanceEvent.objects.filter(action=action).order_by("-id").first()
    assert event is not None
    return event


def test_a_hook_field_change_stores_the_field_before_and_after(sre: Any) -> None:
    hook, _ = services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="Stop",
        raw={"type": "prompt", "prompt": "Finished?", "timeout": 30},
    )
    services.hook_update(
        actor=None, hook=hook, raw={"type": "prompt", "prompt": "Done yet?", "timeout": 60}
    )

    changes = _last_event("hook.updated").changes
    assert changes["settings"] == []
    [change] = changes["hooks"]
    assert (change["kind"], change["event"], change["label"]) == ("changed", "Stop", "Stop prompt")
    assert change["fields"] == [
        {"name": "prompt", "before": "Finished?", "after": "Done yet?", "was_set": True, "is_set": True},
        {"name": "timeout", "before": 30, "after": 60, "was_set": True, "is_set": True},
    ]  # fmt: skip
    diff = diff_of_changes(changes)
    assert diff is not None
    assert changes_summary(diff) == "2 fields changed"


def test_creating_a_hook_stores_it_as_added(sre: Any) -> None:
    services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PostToolUse",
        raw={"type": "command", "matcher": "*", "command": "exit 0"},
    )

    [change] = _last_event("hook.created").changes["hooks"]
    assert change["kind"] == "added"
    # As stored: defaults filled in.
    assert change["hook"] == {
        "name": "PostToolUse all tools", "mode": "enforce",
        "type": "command", "matcher": "*", "command": "exit 0", "timeout": 30, "failMode": "allow",
    }  # fmt: skip


def test_a_mode_change_is_a_setting_change(sre: Any) -> None:
    services.agent_set_mode(actor=None, agent=sre.agent, mode="evaluate_only")

    changes = _last_event("agent.mode_changed").changes
    assert changes["hooks"] == []
    assert [(f["name"], f["before"], f["after"]) for f in changes["settings"]] == [
        ("mode", "enforce", "evaluate_only")
    ]


def test_agent_settings_store_only_the_fields_that_changed(sre: Any) -> None:
    agent = sre.agent
    services.agent_settings_update(
        actor=None,
        agent=agent,
        display_name="SRE agent",
        description=agent.description,
        webhook_url="https://hooks.example.com/sre",
        webhook_format=agent.webhook_format,
    )

    changes = _last_event("agent.settings_changed").changes
    assert {f["name"]: (f["before"], f["after"]) for f in changes["settings"]} == {
        "display_name": ("", "SRE agent"),
        "webhook_url": ("", "https://hooks.example.com/sre"),
    }


def test_a_rollback_stores_the_diff_back_to_the_old_revision(sre: Any) -> None:
    agent = sre.agent
    services.agent_hooks_replace(
        actor=None,
        agent=agent,
        document={"hooks": {"Stop": [{"type": "prompt", "prompt": "One?"}]}},
    )
    target = ConfigRevision.objects.filter(agent=agent).order_by("-number").first()
    assert target is not None
    services.agent_hooks_replace(
        actor=None,
        agent=agent,
        document={
            "hooks": {
                "Stop": [{"type": "prompt", "prompt": "One, really?"}],
                "PostToolUse": [{"type": "command", "matcher": "*", "command": "exit 0"}],
            }
        },
    )

    services.revision_rollback(actor=None, revision=target)

    changes = _last_event("revision.rolled_back").changes
    kinds = sorted((c["kind"], c["event"]) for c in changes["hooks"])
    assert kinds == [("changed", "Stop"), ("removed", "PostToolUse")]
    stop = next(c for c in changes["hooks"] if c["event"] == "Stop")
    assert [(f["name"], f["before"], f["after"]) for f in stop["fields"]] == [
        ("prompt", "One, really?", "One?")
    ]
    diff = diff_of_changes(changes)
    assert diff is not None
    assert changes_summary(diff) == "1 field changed · 1 hook removed"


def test_a_custom_agent_yaml_save_diffs_settings_and_long_text(sre: Any) -> None:
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    services.custom_agent_put(
        actor=None, agent=sre.agent, name="my_hooked_agent", document=document
    )
    assert _last_event("custom_agent.created").changes["created"] is True
    edited = copy.deepcopy(document)
    edited["spec"]["instructions"] = "You are a careful assistant.\nAsk before deleting.\n"
    edited["spec"]["hooks"]["Stop"][0]["prompt"] += "Be brief.\n"

    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=edited)

    event = GovernanceEvent.objects.order_by("-id").first()
    assert event is not None and event.changes is not None
    assert [f["name"] for f in event.changes["settings"]] == ["instructions"]
    diff = diff_of_changes(event.changes)
    assert diff is not None
    [prompt] = diff.hooks[0].fields
    assert ("add", "+Be brief.") in prompt.lines  # long text is shown as a line diff


def test_deleting_a_custom_agent_stores_a_deletion(sre: Any) -> None:
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    custom_agent, _created, _warnings = services.custom_agent_put(
        actor=None, agent=sre.agent, name="my_hooked_agent", document=document
    )
    services.custom_agent_delete(actor=None, custom_agent=custom_agent)

    changes = _last_event("custom_agent.deleted").changes
    assert changes["deleted"] is True
    assert {c["kind"] for c in changes["hooks"]} == {"removed"}


@pytest.mark.parametrize("payload", [None, "text", 3])
def test_an_event_without_a_payload_has_no_diff(payload: Any) -> None:
    assert diff_of_changes(payload) is None


def test_token_events_carry_no_changes_and_no_plaintext(sre: Any) -> None:
    issued = services.agent_token_issue(actor=None, agent=sre.agent, name="ci")

    event = _last_event("token.issued")
    assert event.changes is None
    stored = f"{event.summary} {event.before} {event.after} {event.changes}"
    assert issued.plaintext not in stored
