"""The `changes` payload of configuration governance events: what a change did, field by
field, computed once at write time by the same comparison as "review before apply"
(`agents.config_diff`), and read back into that comparison's types for display.

The payload is plain JSON: `{"created", "deleted", "settings": [field, ...], "hooks":
[hook change, ...]}`; a field is `{"name", "before", "after", "was_set", "is_set"}`, a hook
change `{"kind", "event", "label", "hook_type", "position_before", "position_after",
"moved", "named", "fields": [field, ...], "hook": {...}}` (`hook` only for an added or
removed hook). Line diffs of long text are not stored: they are recomputed when shown.
Configuration documents and agent settings hold no secret (tokens live elsewhere), so
nothing here is redacted; webhook URLs are shown as configured.
"""

from __future__ import annotations

from typing import Any

from agents.config_diff import (
    ABSENT,
    ConfigDiff,
    FieldChange,
    HookChange,
    ScopeConfig,
    config_diff,
    config_of_stored_document,
    field_change,
    fields_diff,
)


def _field(change: FieldChange) -> dict[str, Any]:
    return {
        "name": change.name,
        "before": change.before,
        "after": change.after,
        "was_set": change.was_set,
        "is_set": change.is_set,
    }


def _hook(change: HookChange) -> dict[str, Any]:
    return {
        "kind": change.kind,
        "event": change.event,
        "label": change.label,
        "hook_type": change.hook_type,
        "position_before": change.position_before,
        "position_after": change.position_after,
        "moved": change.moved,
        "named": change.named,
        "fields": [_field(item) for item in change.fields],
        "hook": change.hook if change.kind != "changed" else {},
    }


def changes_of_diff(diff: ConfigDiff) -> dict[str, Any]:
    return {
        "created": diff.created,
        "deleted": diff.deleted,
        "settings": [_field(item) for item in diff.settings],
        "hooks": [_hook(item) for item in diff.hooks],
    }


def settings_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The payload of a settings change (no hooks): every setting whose value differs."""
    return changes_of_diff(
        ConfigDiff(
            created=False,
            deleted=False,
            settings=fields_diff(before, after, tuple(after)),
            hooks=[],
        )
    )


def config_of_snapshot(snapshot: dict[str, Any] | None, *, custom_agent: bool) -> ScopeConfig:
    """A configuration revision's snapshot as a scope configuration (`None`: no revision
    before, so the scope did not exist)."""
    if snapshot is None or snapshot.get("deleted"):
        return ABSENT
    if custom_agent:
        return config_of_stored_document(snapshot)
    return ScopeConfig(
        exists=True, settings={"mode": snapshot.get("mode")}, hooks=snapshot.get("hooks") or {}
    )


def revision_changes(
    before: dict[str, Any] | None, after: dict[str, Any] | None, *, custom_agent: bool
) -> dict[str, Any]:
    """What went from one revision snapshot of a scope to the next."""
    return changes_of_diff(
        config_diff(
            config_of_snapshot(before, custom_agent=custom_agent),
            config_of_snapshot(after, custom_agent=custom_agent),
        )
    )


def _field_of(item: dict[str, Any]) -> FieldChange:
    return field_change(
        str(item.get("name", "")),
        item.get("before"),
        item.get("after"),
        bool(item.get("was_set", True)),
        bool(item.get("is_set", True)),
    )


def diff_of_changes(payload: Any) -> ConfigDiff | None:
    """A stored payload back as the comparison's result; None when it is not one."""
    if not isinstance(payload, dict):
        return None
    hooks = [
        HookChange(
            kind=str(item.get("kind", "changed")),
            event=str(item.get("event", "")),
            label=str(item.get("label", "")),
            hook_type=str(item.get("hook_type", "")),
            position_before=item.get("position_before"),
            position_after=item.get("position_after"),
            fields=[_field_of(field) for field in item.get("fields") or []],
            moved=bool(item.get("moved")),
            named=bool(item.get("named")),
            hook=item.get("hook") or {},
        )
        for item in payload.get("hooks") or []
    ]
    return ConfigDiff(
        created=bool(payload.get("created")),
        deleted=bool(payload.get("deleted")),
        settings=[_field_of(field) for field in payload.get("settings") or []],
        hooks=hooks,
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def changes_summary(diff: ConfigDiff) -> str:
    """One line: "3 fields changed · 1 hook added" (or "no change")."""
    parts = ["created"] if diff.created else ["deleted"] if diff.deleted else []
    fields = len(diff.settings) + sum(len(change.fields) for change in diff.hooks)
    if fields:
        parts.append(f"{_plural(fields, 'field')} changed")
    for kind in ("added", "removed"):
        if count := diff.count(kind):
            parts.append(f"{_plural(count, 'hook')} {kind}")
    moved = sum(1 for change in diff.hooks if change.moved and not change.fields)
    if moved:
        parts.append(f"{_plural(moved, 'hook')} moved")
    return " · ".join(parts) or "no change"
