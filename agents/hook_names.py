"""A hook's identity beside its options: a human `name` (unique in its scope, compared
case-insensitively), an optional `description` and a `mode` (enforce or shadow).

Pure functions over plain values, used by `agents.validation` (documents and forms), the
services (names already taken in a scope) and the data migration that named existing hooks.
`recordReason: true` (off by default) opts the hook in to having its own reason text kept
in the records (docs/audit-storage.md, "Recorded reasons"): a console-side identity key like
`mode`, never part of the hook's options. A document that omits a name gets one derived from the event and matcher ("PreToolUse
restart_service"), made unique in the scope with a number ("… 2").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any, ClassVar, Protocol

NAME_MAX_CHARS = 80
DESCRIPTION_MAX_CHARS = 1000
HOOK_MODES = ("enforce", "shadow")
# Keys of a hook object that are not its options: they never reach `definition`.
# `enabled: false` keeps a hook without running it.
IDENTITY_KEYS = frozenset({"name", "description", "mode", "enabled", "recordReason"})
MODE_DEFAULT = "enforce"
# A name that looks like a hook key would make `hook=` filters ambiguous.
KEY_LIKE_RE = re.compile(r"^hk_[0-9a-f]+$", re.IGNORECASE)
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_DERIVED_MATCHER_CHARS = 48


class _Problems(Protocol):
    def error(self, at: str, message: str) -> None: ...


class _NamedHook(Protocol):
    """A dataclass with a hook's event, options and (possibly empty) name."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def event(self) -> str: ...
    @property
    def definition(self) -> dict[str, Any]: ...
    @property
    def name(self) -> str: ...


def check_identity(raw: dict[str, Any], base: str, problems: _Problems) -> None:
    """Errors for the identity keys of one hook object."""
    if "name" in raw:
        problem = name_problem(raw["name"])
        if problem:
            problems.error(f"{base}/name", problem)
    if "description" in raw:
        value = raw["description"]
        if value is not None and not isinstance(value, str):
            problems.error(f"{base}/description", "description must be a string.")
        elif isinstance(value, str) and "\x00" in value:
            problems.error(f"{base}/description", "description must not contain NUL characters.")
        elif isinstance(value, str) and len(value) > DESCRIPTION_MAX_CHARS:
            problems.error(
                f"{base}/description",
                f"description is {len(value)} characters; the limit is {DESCRIPTION_MAX_CHARS}.",
            )
    if "enabled" in raw and not isinstance(raw["enabled"], bool):
        problems.error(f"{base}/enabled", "enabled must be true or false.")
    if "recordReason" in raw and not isinstance(raw["recordReason"], bool):
        problems.error(f"{base}/recordReason", "recordReason must be true or false.")
    if "mode" in raw and raw["mode"] not in HOOK_MODES:
        problems.error(
            f"{base}/mode",
            "mode must be 'enforce' or 'shadow'; use enabled: false to keep a hook "
            "without running it.",
        )


def name_problem(value: Any) -> str | None:
    """Why `value` cannot be a hook name, or None."""
    if not isinstance(value, str) or not value.strip():
        return "name must be a non-empty string."
    name = value.strip()
    if len(name) > NAME_MAX_CHARS:
        return f"name is {len(name)} characters; the limit is {NAME_MAX_CHARS}."
    if CONTROL_RE.search(name):
        return "name must be one line without control characters."
    if KEY_LIKE_RE.match(name):
        return "name must not look like a hook key (hk_…)."
    return None


def identity_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """name ("" when absent: filled in later), description, mode, enabled and recordReason of
    a valid hook."""
    name, description = raw.get("name"), raw.get("description")
    return {
        "enabled": raw.get("enabled", True),
        "record_reason": raw.get("recordReason", False),
        "name": name.strip() if isinstance(name, str) else "",
        "description": description.strip() if isinstance(description, str) else "",
        "mode": raw.get("mode", MODE_DEFAULT),
    }


def derived_name(event: str, definition: dict[str, Any]) -> str:
    """ "PreToolUse restart_service", "PostToolUse all tools", "Stop prompt"."""
    matcher = definition.get("matcher")
    if event == "Stop" or not isinstance(matcher, str) or not matcher:
        return f"{event} {definition.get('type', 'prompt')}"
    if matcher == "*":
        return f"{event} all tools"
    shown = " ".join(matcher.split())
    if len(shown) > _DERIVED_MATCHER_CHARS:
        shown = shown[: _DERIVED_MATCHER_CHARS - 1] + "…"
    return f"{event} {shown}"


def unique_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted 2`, `wanted 3`… whichever is not in `taken` (lowercased names);
    the chosen name is added to `taken`."""
    candidate, number = wanted, 1
    while candidate.lower() in taken:
        number += 1
        suffix = f" {number}"
        candidate = wanted[: NAME_MAX_CHARS - len(suffix)] + suffix
    taken.add(candidate.lower())
    return candidate


def fill_names(
    items: Iterable[tuple[str | None, str, dict[str, Any]]], taken: Iterable[str] = ()
) -> list[str]:
    """Names for `(name or None, event, definition)` in order: given names kept, missing ones
    derived and made unique against every given name and `taken`."""
    items = list(items)
    used = {name.lower() for name in taken}
    used |= {name.lower() for name, _event, _definition in items if name}
    return [
        name if name else unique_name(derived_name(event, definition), used)
        for name, event, definition in items
    ]


def with_names[H: _NamedHook](hooks: list[H], taken: Iterable[str] = ()) -> list[H]:
    """`hooks` with every missing name derived, unique against the given ones and `taken`."""
    names = fill_names(((hook.name, hook.event, hook.definition) for hook in hooks), taken)
    return [dataclasses.replace(hook, name=name) for hook, name in zip(hooks, names, strict=True)]


def check_name_unique(name: str, at: str, seen: dict[str, str], problems: _Problems) -> None:
    """Refuse `name` at `at` when `seen` (lowercased name → where) has it; then remember it."""
    if not name:
        return
    if name.lower() in seen:
        where = seen[name.lower()]
        problems.error(at, f"name {name!r} is already used by another hook here ({where}).")
    seen.setdefault(name.lower(), at.removesuffix("/name"))
