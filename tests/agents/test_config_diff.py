"""agents.config_diff: what a configuration change does, hook by hook and field by field."""

from __future__ import annotations

from typing import Any

from agents.config_diff import ABSENT, ScopeConfig, config_diff, hooks_diff

PROMPT = {"type": "prompt", "prompt": "Done?", "timeout": 30, "failMode": "allow"}
GUARD = {
    "type": "command",
    "matcher": "Bash",
    "command": "exit 0",
    "timeout": 30,
    "failMode": "block",
}
AUDIT = {
    "type": "command",
    "matcher": "*",
    "command": "echo audit",
    "timeout": 30,
    "failMode": "allow",
}


def _config(hooks: dict[str, list[dict[str, Any]]], **settings: Any) -> ScopeConfig:
    return ScopeConfig(exists=True, settings=settings or {"mode": "enforce"}, hooks=hooks)


def _kinds(changes: Any) -> list[tuple[str, str]]:
    return [(change.kind, change.label) for change in changes]


def test_identical_configurations_are_an_empty_diff() -> None:
    config = _config({"Stop": [PROMPT], "PostToolUse": [GUARD, AUDIT]})
    assert config_diff(config, _config({"Stop": [PROMPT], "PostToolUse": [GUARD, AUDIT]})).is_empty


def test_an_added_hook_is_added_and_the_hooks_after_it_are_not_changed() -> None:
    changes = hooks_diff({"PostToolUse": [GUARD, AUDIT]}, {"PostToolUse": [PROMPT, GUARD, AUDIT]})
    assert _kinds(changes) == [("added", "PostToolUse hook #1")]
    assert changes[0].position_after == 1 and changes[0].hook["prompt"] == "Done?"


def test_a_removed_hook_is_removed_with_its_place() -> None:
    changes = hooks_diff({"PostToolUse": [GUARD, AUDIT]}, {"PostToolUse": [AUDIT]})
    assert _kinds(changes) == [("removed", "PostToolUse hook #1")]
    assert changes[0].position_before == 1 and changes[0].hook["matcher"] == "Bash"


def test_a_changed_hook_lists_each_changed_field_with_both_values() -> None:
    after = {**GUARD, "failMode": "allow", "timeout": 90, "matcher": "Bash|Shell"}
    changes = hooks_diff({"PostToolUse": [GUARD]}, {"PostToolUse": [after]})
    assert _kinds(changes) == [("changed", "PostToolUse hook #1")]
    fields = {f.name: (f.before, f.after) for f in changes[0].fields}
    assert fields == {
        "matcher": ("Bash", "Bash|Shell"),
        "timeout": (30, 90),
        "failMode": ("block", "allow"),
    }
    assert [f.name for f in changes[0].fields] == ["matcher", "timeout", "failMode"]


def test_a_field_set_or_unset_says_so_and_disabling_is_a_change() -> None:
    after = {**PROMPT, "maxRejections": 5, "enabled": False}
    del after["failMode"]
    (change,) = hooks_diff({"Stop": [PROMPT]}, {"Stop": [after]})
    fields = {f.name: f for f in change.fields}
    assert not fields["maxRejections"].was_set and fields["maxRejections"].after == 5
    assert not fields["failMode"].is_set and fields["failMode"].before == "allow"
    assert (fields["enabled"].before, fields["enabled"].after) == (True, False)


def test_multi_line_text_is_compared_line_by_line() -> None:
    before = {**GUARD, "command": None, "script": "#!/bin/bash\necho one\nexit 0\n"}
    after = {**before, "script": "#!/bin/bash\necho two\nexit 0\n"}
    (change,) = hooks_diff({"PostToolUse": [before]}, {"PostToolUse": [after]})
    (script,) = change.fields
    assert ("del", "-echo one") in script.lines and ("add", "+echo two") in script.lines


def test_unknown_hook_fields_are_compared_too() -> None:
    """New document fields (a hook's name, description, mode…) need no change here."""
    before = {**PROMPT, "description": "Checks the ending."}
    after = {**PROMPT, "description": "Checks the ending politely.", "mode": "shadow"}
    (change,) = hooks_diff({"Stop": [before]}, {"Stop": [after]})
    assert [f.name for f in change.fields] == ["description", "mode"]


def test_named_hooks_are_matched_by_name_wherever_they_move() -> None:
    first = {**GUARD, "name": "guard"}
    second = {**AUDIT, "name": "audit"}
    changes = hooks_diff(
        {"PostToolUse": [first, second]}, {"PostToolUse": [second, {**first, "timeout": 60}]}
    )
    by_label = {change.label: change for change in changes}
    assert set(by_label) == {"guard", "audit"}
    assert sum(change.moved for change in changes) == 1  # swapping two hooks moves one
    guard = by_label["guard"]
    assert guard.kind == "changed" and [f.name for f in guard.fields] == ["timeout"]
    assert (guard.position_before, guard.position_after) == (1, 2)


def test_a_renamed_hook_is_a_change_of_its_name_not_a_removal() -> None:
    (change,) = hooks_diff(
        {"Stop": [{**PROMPT, "name": "old"}]}, {"Stop": [{**PROMPT, "name": "new"}]}
    )
    assert change.kind == "changed"
    assert [(f.name, f.before, f.after) for f in change.fields] == [("name", "old", "new")]


def test_reordering_reports_the_moved_hook_only() -> None:
    changes = hooks_diff(
        {"PostToolUse": [GUARD, AUDIT, PROMPT]}, {"PostToolUse": [AUDIT, PROMPT, GUARD]}
    )
    assert len(changes) == 1
    (moved,) = changes
    assert moved.kind == "changed" and moved.moved and not moved.fields
    assert (moved.position_before, moved.position_after) == (1, 3)


def test_hooks_of_different_events_are_never_paired() -> None:
    changes = hooks_diff({"Stop": [PROMPT]}, {"PostToolUse": [GUARD]})
    assert sorted(c.kind for c in changes) == ["added", "removed"]


def test_settings_changes_are_listed_in_document_order() -> None:
    before = _config({}, instructions="A", handoffDescription="", enableVanillaMode=False)
    after = _config({}, instructions="B", handoffDescription="", enableVanillaMode=True)
    diff = config_diff(before, after)
    assert [(f.name, f.before, f.after) for f in diff.settings] == [
        ("instructions", "A", "B"),
        ("enableVanillaMode", False, True),
    ]
    assert diff.settings[1].after_text == "true"


def test_agent_level_mode_is_a_setting() -> None:
    diff = config_diff(_config({}, mode="enforce"), _config({}, mode="evaluate_only"))
    assert [(f.name, f.before, f.after) for f in diff.settings] == [
        ("mode", "enforce", "evaluate_only")
    ]


def test_a_new_scope_is_created_with_every_hook_added_and_deleting_removes_all() -> None:
    config = _config({"Stop": [PROMPT], "PostToolUse": [GUARD]}, instructions="hi")
    created = config_diff(ABSENT, config)
    assert created.created and not created.deleted
    assert (created.added, created.removed, created.changed) == (2, 0, 0)
    deleted = config_diff(config, ABSENT)
    assert deleted.deleted and (deleted.added, deleted.removed) == (0, 2)


def test_values_are_shown_as_the_document_writes_them() -> None:
    diff = config_diff(ABSENT, _config({}, handoffDescription="", enableVanillaMode=False))
    assert [(f.name, f.was_set, f.after_text) for f in diff.settings] == [
        ("handoffDescription", False, '""'),
        ("enableVanillaMode", False, "false"),
    ]
