"""What a configuration change will do, hook by hook: the one comparison behind "review before
apply" (the YAML editor, imports and rollbacks).

Pure functions over parsed configurations (`ScopeConfig`: a scope's settings and its hooks
map, defaults filled in as stored). Hooks are matched by identity: a hook's `name` when it
has one, otherwise by its place in its event's list, aligned so that inserting or removing
one hook does not show every later hook as changed. Fields are compared generically over the
hook's document keys, so a field added to the hook format appears in the diff by itself.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from agents.validation import EVENTS, KEY_ORDER, CustomAgentDocument, HookInput, hooks_document

TEXT_DIFF_MAX_LINES = 4000
_KEY_RANK = {key: index for index, key in enumerate(KEY_ORDER)}


@dataclass(frozen=True)
class ScopeConfig:
    """One scope as configured: whether it exists, its settings and `{event: [hook, ...]}`."""

    exists: bool
    settings: dict[str, Any]
    hooks: dict[str, list[dict[str, Any]]]


ABSENT = ScopeConfig(exists=False, settings={}, hooks={})


def _hooks_map(hooks: list[HookInput]) -> dict[str, list[dict[str, Any]]]:
    return hooks_document(hooks)


def config_of_document(document: CustomAgentDocument) -> ScopeConfig:
    """A validated custom agent document as a scope configuration."""
    return ScopeConfig(
        exists=True,
        settings={
            "instructions": document.instructions,
            "handoffDescription": document.handoff_description,
            "enableVanillaMode": document.enable_vanilla_mode,
        },
        hooks=_hooks_map(document.hooks),
    )


def config_of_stored_document(document: dict[str, Any]) -> ScopeConfig:
    """A custom agent's document as the console projects it (`custom_agent_as_document`)."""
    spec = document["spec"]
    return ScopeConfig(
        exists=True,
        settings={
            key: spec[key] for key in ("instructions", "handoffDescription", "enableVanillaMode")
        },
        hooks=spec["hooks"],
    )


def config_of_agent_level(mode: str, hooks: list[HookInput]) -> ScopeConfig:
    return ScopeConfig(exists=True, settings={"mode": mode}, hooks=_hooks_map(hooks))


def shown(value: Any) -> str:
    """A value as the YAML/JSON document writes it (strings as they are)."""
    if isinstance(value, str):
        return value or '""'
    return json.dumps(value)


def _is_block(value: Any) -> bool:
    return isinstance(value, str) and ("\n" in value.strip() or len(value) > 80)


@dataclass(frozen=True)
class FieldChange:
    """One field's old and new value; `None` with `was_set`/`is_set` False means absent."""

    name: str
    before: Any
    after: Any
    was_set: bool = True
    is_set: bool = True
    # For multi-line text: (css class, line) pairs of a unified diff.
    lines: list[tuple[str, str]] = field(default_factory=list)

    @property
    def before_text(self) -> str:
        return shown(self.before)

    @property
    def after_text(self) -> str:
        return shown(self.after)


@dataclass(frozen=True)
class HookChange:
    kind: str  # "added", "removed" or "changed"
    event: str
    label: str
    hook_type: str
    position_before: int | None  # 1-based place in its event's list
    position_after: int | None
    fields: list[FieldChange] = field(default_factory=list)
    moved: bool = False
    named: bool = False  # the label is the hook's name (else its event and place)
    hook: dict[str, Any] = field(default_factory=dict)  # the hook after (before, if removed)

    @property
    def items(self) -> list[tuple[str, str, bool]]:
        """(key, value as written, shown as a block) of an added or removed hook."""
        return [(key, shown(value), _is_block(value)) for key, value in self.hook.items()]


@dataclass(frozen=True)
class ConfigDiff:
    created: bool  # the scope does not exist yet
    deleted: bool  # the scope goes away
    settings: list[FieldChange]
    hooks: list[HookChange]

    @property
    def is_empty(self) -> bool:
        return not (self.created or self.deleted or self.settings or self.hooks)

    def count(self, kind: str) -> int:
        return sum(1 for change in self.hooks if change.kind == kind)

    @property
    def added(self) -> int:
        return self.count("added")

    @property
    def removed(self) -> int:
        return self.count("removed")

    @property
    def changed(self) -> int:
        return self.count("changed")


@dataclass(eq=False)
class _Entry:
    event: str
    index: int
    hook: dict[str, Any]

    @property
    def name(self) -> str | None:
        name = self.hook.get("name")
        return name if isinstance(name, str) and name else None

    @property
    def canonical(self) -> str:
        return json.dumps(self.hook, sort_keys=True, default=str)


def _entries(hooks: dict[str, list[dict[str, Any]]]) -> list[_Entry]:
    events = [event for event in EVENTS if event in hooks] + sorted(set(hooks) - set(EVENTS))
    return [
        _Entry(event, index, {"enabled": True, **hook})
        for event in events
        for index, hook in enumerate(hooks[event] or [])
    ]


def _text_lines(before: Any, after: Any) -> list[tuple[str, str]]:
    if not (isinstance(before, str) and isinstance(after, str)):
        return []
    if "\n" not in before.strip() and "\n" not in after.strip():
        return []
    old, new = before.splitlines(), after.splitlines()
    if len(old) + len(new) > TEXT_DIFF_MAX_LINES:
        return [("hunk", f"@@ {len(old)} → {len(new)} lines: too long to compare line by line @@")]
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [
        (kinds.get(line[:1], "same"), line)
        for line in difflib.unified_diff(old, new, lineterm="", n=2)
        if not line.startswith(("+++", "---"))
    ]


def fields_diff(
    before: dict[str, Any], after: dict[str, Any], order: tuple[str, ...] = ()
) -> list[FieldChange]:
    """Every key whose value differs, in `order` first, then the hook key order, then A-Z."""
    rank = {key: index for index, key in enumerate(order)} if order else _KEY_RANK
    keys = sorted(set(before) | set(after), key=lambda key: (rank.get(key, len(rank)), key))
    return [
        field_change(key, before.get(key), after.get(key), key in before, key in after)
        for key in keys
        if key not in before or key not in after or before[key] != after[key]
    ]


def field_change(
    name: str, before: Any, after: Any, was_set: bool = True, is_set: bool = True
) -> FieldChange:
    """One field's change, with the line diff when it is multi-line text."""
    return FieldChange(
        name=name,
        before=before,
        after=after,
        was_set=was_set,
        is_set=is_set,
        lines=_text_lines(before, after),
    )


def _pair(before: list[_Entry], after: list[_Entry]) -> list[tuple[_Entry | None, _Entry | None]]:
    """Match hooks by name first, then per event by aligning the remaining lists."""
    pairs: list[tuple[_Entry | None, _Entry | None]] = []
    named_after = {entry.name: entry for entry in after if entry.name}
    taken: set[int] = set()
    rest_before = []
    for entry in before:
        partner = named_after.get(entry.name) if entry.name else None
        if partner is not None and id(partner) not in taken:
            pairs.append((entry, partner))
            taken.add(id(partner))
        else:
            rest_before.append(entry)
    rest_after = [entry for entry in after if id(entry) not in taken]
    for event in dict.fromkeys([e.event for e in rest_before] + [e.event for e in rest_after]):
        old = [entry for entry in rest_before if entry.event == event]
        new = [entry for entry in rest_after if entry.event == event]
        matcher = difflib.SequenceMatcher(
            None, [e.canonical for e in old], [e.canonical for e in new], autojunk=False
        )
        removed: list[_Entry] = []
        added: list[_Entry] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            common = min(i2 - i1, j2 - j1) if tag in ("equal", "replace") else 0
            pairs.extend(zip(old[i1 : i1 + common], new[j1 : j1 + common], strict=True))
            removed.extend(old[i1 + common : i2])
            added.extend(new[j1 + common : j2])
        # A hook removed at one place and added unchanged at another has moved.
        for entry in list(removed):
            twin = next((a for a in added if a.canonical == entry.canonical), None)
            if twin is not None:
                pairs.append((entry, twin))
                removed.remove(entry)
                added.remove(twin)
        pairs.extend((entry, None) for entry in removed)
        pairs.extend((None, entry) for entry in added)
    return pairs


def _moved(pairs: list[tuple[_Entry, _Entry]]) -> set[int]:
    """Pairs whose order relative to the other kept hooks of their event changed."""
    moved: set[int] = set()
    for event in {b.event for b, a in pairs if b.event == a.event}:
        kept = [(b, a) for b, a in pairs if b.event == a.event == event]
        old = [id(b) for b, _a in sorted(kept, key=lambda pair: pair[0].index)]
        new = [id(b) for b, _a in sorted(kept, key=lambda pair: pair[1].index)]
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        stable = {
            old[block.a + k] for block in matcher.get_matching_blocks() for k in range(block.size)
        }
        moved.update(key for key in old if key not in stable)
    return moved


def _label(entry: _Entry) -> str:
    return entry.name or f"{entry.event} hook #{entry.index + 1}"


def hooks_diff(
    before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]
) -> list[HookChange]:
    pairs = _pair(_entries(before), _entries(after))
    both = [(b, a) for b, a in pairs if b is not None and a is not None]
    moved = _moved(both)
    changes: list[HookChange] = []
    for old, new in pairs:
        entry = new or old
        assert entry is not None
        hook_type = str(entry.hook.get("type", "prompt"))
        if old is None or new is None:
            kind = "added" if old is None else "removed"
            hook = {
                key: value for key, value in entry.hook.items() if key != "enabled" or not value
            }
            changes.append(
                HookChange(
                    kind=kind,
                    event=entry.event,
                    label=_label(entry),
                    hook_type=hook_type,
                    position_before=None if old is None else old.index + 1,
                    position_after=None if new is None else new.index + 1,
                    named=entry.name is not None,
                    hook=hook,
                )
            )
            continue
        fields = fields_diff({"event": old.event, **old.hook}, {"event": new.event, **new.hook})
        if fields or id(old) in moved:
            changes.append(
                HookChange(
                    kind="changed",
                    event=new.event,
                    label=_label(new),
                    hook_type=hook_type,
                    position_before=old.index + 1,
                    position_after=new.index + 1,
                    fields=fields,
                    moved=id(old) in moved,
                    named=new.name is not None,
                    hook=new.hook,
                )
            )
    rank = {event: index for index, event in enumerate(EVENTS)}
    changes.sort(
        key=lambda c: (rank.get(c.event, len(rank)), c.position_after or c.position_before or 0)
    )
    return changes


def config_diff(before: ScopeConfig, after: ScopeConfig) -> ConfigDiff:
    """What applying `after` over `before` changes (either may be ABSENT)."""
    order = tuple(after.settings) or tuple(before.settings)
    return ConfigDiff(
        created=after.exists and not before.exists,
        deleted=before.exists and not after.exists,
        settings=fields_diff(before.settings, after.settings, order),
        hooks=hooks_diff(before.hooks, after.hooks),
    )
