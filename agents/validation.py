"""Validation of hooks and of the ExtendedAgent v2 document: one implementation
for the portal forms and the REST API alike.

Pure functions over plain dicts. Errors and warnings are keyed by JSON pointer
(`/spec/hooks/PostToolUse/0/timeout`); a document with any error is refused whole.

Limits (besides the hook document's own rules): at most HOOKS_PER_EVENT_MAX hooks per event in one scope (the agent
level, or one custom agent), CUSTOM_AGENTS_MAX custom agents per agent (checked by the
services, which count), and a size for every text field. The size of a whole document, YAML
aliases expanded, is bounded where it is parsed (console.parsers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agents.hook_names import (
    IDENTITY_KEYS,
    MODE_DEFAULT,
    check_identity,
    check_name_unique,
    identity_fields,
    with_names,
)
from console.errors import InvalidInput, pointer
from console_client.patterns import matcher_error

API_VERSION = "azuresre.ai/v2"
KIND = "ExtendedAgent"
EVENTS = ("Stop", "PostToolUse", "PreToolUse")
MATCHER_EVENTS = ("PostToolUse", "PreToolUse")
HOOK_TYPES = ("prompt", "command", "approval")
FAIL_MODES = ("allow", "block")
MODEL_TIERS = ("Reasoning", "ReasoningFast", "GeneralPurpose", "Fast", "LongContext")
SHEBANGS = ("#!/bin/bash", "#!/usr/bin/env python3")
SCRIPT_MAX_BYTES = 64 * 1024
PROMPT_MAX_BYTES = 64 * 1024
# Every agent compiles every matcher (RE2, compile time grows with the pattern).
MATCHER_MAX_CHARS = 1024
INSTRUCTIONS_MAX_BYTES = 64 * 1024
HANDOFF_DESCRIPTION_MAX_BYTES = 4 * 1024
HOOKS_PER_EVENT_MAX = 100
AGENT_DESCRIPTION_MAX_CHARS = 4000
CUSTOM_AGENTS_MAX = 100
TIMEOUT_MIN, TIMEOUT_MAX, TIMEOUT_DEFAULT = 1, 300, 30
MAX_REJECTIONS_MIN, MAX_REJECTIONS_MAX, MAX_REJECTIONS_DEFAULT = 1, 25, 3
EXPIRES_MIN, EXPIRES_MAX, EXPIRES_DEFAULT = 1, 30 * 24 * 3600, 600
APPROVALS_MIN, APPROVALS_MAX, APPROVALS_DEFAULT = 1, 10, 1
FAIL_MODE_DEFAULT = "allow"
MODEL_DEFAULT = "ReasoningFast"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DEPLOYMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")

# Keys each hook type may carry; the identity keys (agents.hook_names) are common to all.
COMMON_KEYS = {"type", "matcher"} | IDENTITY_KEYS
TYPE_KEYS = {
    "prompt": COMMON_KEYS | {"prompt", "timeout", "failMode", "model", "maxRejections"},
    "command": COMMON_KEYS | {"command", "script", "timeout", "failMode", "model", "maxRejections"},
    "approval": COMMON_KEYS | {"expiresIn", "approvalsRequired"},
}
ALL_HOOK_KEYS = set().union(*TYPE_KEYS.values())
# Output order of a hook's keys, as the source documents write them.
KEY_ORDER = (
    "name", "description", "type", "matcher", "prompt", "command", "timeout", "failMode",
    "model", "maxRejections", "expiresIn", "approvalsRequired", "script", "mode", "enabled",
    "recordReason",
)  # fmt: skip
DOCUMENT_KEYS = {"api_version", "kind", "metadata", "spec"}
METADATA_KEYS = {"name"}
SPEC_KEYS = {"instructions", "handoffDescription", "enableVanillaMode", "hooks"}


@dataclass
class Problems:
    errors: dict[str, list[str]] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)

    def error(self, at: str, message: str) -> None:
        self.errors.setdefault(at, []).append(message)

    def warn(self, at: str, message: str) -> None:
        self.warnings.setdefault(at, []).append(message)

    def refusal(self, message: str = "The document is invalid.") -> InvalidInput:
        """The error to raise for these problems (their warnings ride along for forms)."""
        return InvalidInput(message, fields=self.errors, warnings=self.warnings)

    def merge(self, other: Problems) -> None:
        for at, messages in other.errors.items():
            self.errors.setdefault(at, []).extend(messages)
        for at, messages in other.warnings.items():
            self.warnings.setdefault(at, []).extend(messages)


@dataclass(frozen=True)
class HookInput:
    """A validated hook: event, normalized definition, whether it runs, identity."""

    event: str
    definition: dict[str, Any]
    enabled: bool = True
    name: str = ""
    description: str = ""
    mode: str = MODE_DEFAULT
    record_reason: bool = False


@dataclass(frozen=True)
class CustomAgentDocument:
    name: str
    instructions: str
    handoff_description: str
    enable_vanilla_mode: bool
    hooks: list[HookInput]
    warnings: dict[str, list[str]]


def _shown(value: Any) -> str:
    """A value quoted in a message: scalars as written (shortened), containers by type only,
    so an aliased YAML structure is never expanded into an error message."""
    if value is None or isinstance(value, str | int | float | bool):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__}"


def _has_nul(value: Any, key: str, at: str, problems: Problems) -> bool:
    """PostgreSQL text and jsonb cannot hold NUL characters: refuse them by field."""
    if isinstance(value, str) and "\x00" in value:
        problems.error(at, f"{key} must not contain NUL characters.")
        return True
    return False


def _too_big(value: Any, key: str, limit: int, at: str, problems: Problems) -> bool:
    """Text fields are bounded in UTF-8 bytes, as scripts are (a script: at most 64 KB)."""
    if not isinstance(value, str) or len(value) <= limit // 4:
        return False
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        problems.error(at, f"{key} is {size} bytes; the limit is {limit} bytes.")
        return True
    return False


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_in_range(
    raw: dict[str, Any], key: str, low: int, high: int, at: str, problems: Problems
) -> None:
    value = raw[key]
    if not _is_int(value):
        problems.error(at, f"{key} must be an integer, got {type(value).__name__}.")
    elif not low <= value <= high:
        problems.error(at, f"{key} must be between {low} and {high}, got {value}.")


def _check_matcher(raw: dict[str, Any], event: str, base: str, problems: Problems) -> None:
    at = f"{base}/matcher"
    if "matcher" not in raw:
        if event in MATCHER_EVENTS:
            problems.error(at, f"matcher is required for {event} hooks ('*' matches every tool).")
        return
    matcher = raw["matcher"]
    if event not in MATCHER_EVENTS:
        problems.warn(at, f"matcher has no effect on {event} hooks.")
    if matcher is None or matcher == "":
        problems.warn(at, "An empty or null matcher matches no tool.")
        return
    if not isinstance(matcher, str):
        problems.error(at, "matcher must be a string (a regular expression, or '*').")
        return
    if len(matcher) > MATCHER_MAX_CHARS:
        problems.error(
            at, f"matcher is {len(matcher)} characters; the limit is {MATCHER_MAX_CHARS}."
        )
        return
    if _has_nul(matcher, "matcher", at, problems):
        return
    # Agents evaluate matchers with RE2 (linear time, console_client.patterns): a pattern
    # only Python's backtracking engine accepts (lookaround, backreferences) is refused.
    problem = matcher_error(matcher)
    if problem is not None:
        problems.error(
            at,
            f"matcher is not a valid regular expression in RE2 syntax (no lookaround or "
            f"backreferences): {problem}.",
        )


def _check_script(raw: dict[str, Any], key: str, at: str, problems: Problems) -> None:
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        problems.error(at, f"{key} must be a non-empty string.")
        return
    _has_nul(value, key, at, problems)
    _too_big(value, key, SCRIPT_MAX_BYTES, at, problems)
    if key == "script":
        first_line = value.split("\n", 1)[0].rstrip("\r")
        if first_line not in SHEBANGS:
            problems.error(
                at,
                f"script must start with '{SHEBANGS[0]}' or '{SHEBANGS[1]}', got {_shown(first_line)}.",
            )


def validate_hook(raw: Any, *, event: str, base: str = "") -> tuple[HookInput | None, Problems]:
    """Validate one hook object under `event`; `base` is its JSON pointer."""
    problems = Problems()
    if not isinstance(raw, dict):
        problems.error(base or "/", "A hook must be an object.")
        return None, problems

    hook_type = raw.get("type", "prompt")
    if hook_type not in HOOK_TYPES:
        problems.error(
            f"{base}/type",
            f"type must be 'prompt', 'command' or 'approval' (PreToolUse only), got {_shown(hook_type)}.",
        )
        return None, problems
    if hook_type == "approval" and event != "PreToolUse":
        problems.error(f"{base}/type", "approval hooks are only valid under PreToolUse.")
        return None, problems

    allowed = TYPE_KEYS[hook_type]
    for key in raw:
        if key not in allowed:
            reason = (
                f"{key} is not valid for {hook_type} hooks."
                if key in ALL_HOOK_KEYS
                else f"Unknown field {_shown(key)}."
            )
            problems.error(pointer_join(base, key), reason)

    _check_matcher(raw, event, base, problems)
    check_identity(raw, base, problems)

    if hook_type == "prompt":
        prompt = raw.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            problems.error(f"{base}/prompt", "prompt is required for prompt hooks.")
        _has_nul(prompt, "prompt", f"{base}/prompt", problems)
        _too_big(prompt, "prompt", PROMPT_MAX_BYTES, f"{base}/prompt", problems)
    elif hook_type == "command":
        present = [key for key in ("command", "script") if key in raw]
        if not present:
            problems.error(
                f"{base}/command", "A command hook needs exactly one of command or script."
            )
        elif len(present) == 2:
            problems.error(f"{base}/script", "command and script are mutually exclusive.")
        for key in present:
            _check_script(raw, key, f"{base}/{key}", problems)
        if "model" in raw:
            problems.warn(f"{base}/model", "model has no effect on command hooks.")

    if hook_type in ("prompt", "command"):
        if "timeout" in raw:
            _int_in_range(raw, "timeout", TIMEOUT_MIN, TIMEOUT_MAX, f"{base}/timeout", problems)
        if "failMode" in raw and raw["failMode"] not in FAIL_MODES:
            problems.error(
                f"{base}/failMode",
                f"failMode must be 'allow' or 'block', got {_shown(raw['failMode'])}.",
            )
        if "model" in raw:
            model = raw["model"]
            if not isinstance(model, str) or not (
                model in MODEL_TIERS or DEPLOYMENT_RE.match(model)
            ):
                problems.error(
                    f"{base}/model",
                    f"model must be a tier ({', '.join(MODEL_TIERS)}) or a deployment name.",
                )
        if "maxRejections" in raw:
            at = f"{base}/maxRejections"
            _int_in_range(
                raw, "maxRejections", MAX_REJECTIONS_MIN, MAX_REJECTIONS_MAX, at, problems
            )
            if event != "Stop":
                problems.warn(at, f"maxRejections has no effect on {event} hooks (Stop only).")
            elif hook_type == "command":
                problems.warn(
                    at, "maxRejections has no effect on command hooks (prompt Stop hooks only)."
                )
    else:
        if raw.get("recordReason") is True:
            problems.warn(
                f"{base}/recordReason", "recordReason has no effect on approval hooks (no reason)."
            )
        if "expiresIn" in raw:
            _int_in_range(raw, "expiresIn", EXPIRES_MIN, EXPIRES_MAX, f"{base}/expiresIn", problems)
        if "approvalsRequired" in raw:
            at = f"{base}/approvalsRequired"
            _int_in_range(raw, "approvalsRequired", APPROVALS_MIN, APPROVALS_MAX, at, problems)

    if problems.errors:
        return None, problems
    definition = hook_with_defaults(raw, event)
    return HookInput(event=event, definition=definition, **identity_fields(raw)), problems


def pointer_join(base: str, key: str | int) -> str:
    return base + pointer(key)


def hook_with_defaults(raw: dict[str, Any], event: str) -> dict[str, Any]:
    """The hook's options as stored: every default filled in, its identity left out."""
    hook = {key: value for key, value in raw.items() if key not in IDENTITY_KEYS}
    hook_type = hook.setdefault("type", "prompt")
    if hook_type in ("prompt", "command"):
        hook.setdefault("timeout", TIMEOUT_DEFAULT)
        hook.setdefault("failMode", FAIL_MODE_DEFAULT)
    if hook_type == "prompt":
        hook.setdefault("model", MODEL_DEFAULT)
        if event == "Stop":
            hook.setdefault("maxRejections", MAX_REJECTIONS_DEFAULT)
    if hook_type == "approval":
        hook.setdefault("expiresIn", EXPIRES_DEFAULT)
        hook.setdefault("approvalsRequired", APPROVALS_DEFAULT)
    return order_hook_keys(hook)


def order_hook_keys(hook: dict[str, Any]) -> dict[str, Any]:
    rank = {key: index for index, key in enumerate(KEY_ORDER)}
    return dict(sorted(hook.items(), key=lambda item: rank.get(item[0], len(rank))))


def validate_hooks_map(raw: Any, *, base: str) -> tuple[list[HookInput], Problems]:
    """Validate `{"Stop": [...], "PostToolUse": [...], ...}`; hooks come back in order,
    named: names are unique in the map, missing ones derived."""
    problems = Problems()
    hooks: list[HookInput] = []
    named_at: dict[str, str] = {}
    if raw is None:
        return hooks, problems
    if not isinstance(raw, dict):
        problems.error(base, "hooks must be a mapping of event name to a list of hooks.")
        return hooks, problems
    for event, items in raw.items():
        at = pointer_join(base, event)
        if event not in EVENTS:
            problems.error(at, f"Unknown event {event!r}; expected one of {', '.join(EVENTS)}.")
            continue
        if items is None:
            continue
        if not isinstance(items, list):
            problems.error(at, f"{event} must be a list of hooks.")
            continue
        if len(items) > HOOKS_PER_EVENT_MAX:
            problems.error(
                at,
                f"{event} has {len(items)} hooks; the limit is {HOOKS_PER_EVENT_MAX} "
                "per event in one scope.",
            )
            continue
        for index, item in enumerate(items):
            hook_at = pointer_join(at, index)
            hook, hook_problems = validate_hook(item, event=event, base=hook_at)
            problems.merge(hook_problems)
            if hook is not None:
                hooks.append(hook)
                check_name_unique(hook.name, f"{hook_at}/name", named_at, problems)
    return with_names(hooks), problems


def _check_keys(raw: dict[str, Any], allowed: set[str], base: str, problems: Problems) -> None:
    for key in raw:
        if key not in allowed:
            problems.error(pointer_join(base, key), f"Unknown field {_shown(key)}.")


def validate_name(name: Any, at: str, problems: Problems) -> None:
    if not isinstance(name, str) or not name:
        problems.error(at, "name is required.")
    elif not NAME_RE.match(name):
        problems.error(
            at,
            "name must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit.",
        )


def validate_custom_agent_text(
    instructions: Any,
    handoff_description: Any,
    problems: Problems,
    *,
    instructions_at: str = "/instructions",
    handoff_at: str = "/handoff_description",
) -> None:
    """A custom agent's two text fields, in a document or from the portal's form."""
    for value, key, limit, at in (
        (instructions, "instructions", INSTRUCTIONS_MAX_BYTES, instructions_at),
        (handoff_description, "handoffDescription", HANDOFF_DESCRIPTION_MAX_BYTES, handoff_at),
    ):
        if not _has_nul(value, key, at, problems):
            _too_big(value, key, limit, at, problems)


def validate_document(raw: Any) -> CustomAgentDocument:
    """Validate an ExtendedAgent v2 document; raise InvalidInput naming every bad field."""
    problems = Problems()
    if not isinstance(raw, dict):
        problems.error(
            "", "The document must be a mapping with api_version, kind, metadata and spec."
        )
        raise problems.refusal()
    _check_keys(raw, DOCUMENT_KEYS, "", problems)
    if raw.get("api_version") != API_VERSION:
        problems.error(
            "/api_version",
            f"api_version must be {API_VERSION!r}, got {_shown(raw.get('api_version'))}.",
        )
    if raw.get("kind") != KIND:
        problems.error("/kind", f"kind must be {KIND!r}, got {_shown(raw.get('kind'))}.")

    metadata = raw.get("metadata")
    name = ""
    if not isinstance(metadata, dict):
        problems.error("/metadata", "metadata is required and must be a mapping with a name.")
    else:
        _check_keys(metadata, METADATA_KEYS, "/metadata", problems)
        validate_name(metadata.get("name"), "/metadata/name", problems)
        raw_name = metadata.get("name")
        name = raw_name if isinstance(raw_name, str) else ""

    spec = raw.get("spec", {})
    hooks: list[HookInput] = []
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        problems.error("/spec", "spec must be a mapping.")
        spec = {}
    _check_keys(spec, SPEC_KEYS, "/spec", problems)
    for key in ("instructions", "handoffDescription"):
        if key in spec and spec[key] is not None and not isinstance(spec[key], str):
            problems.error(f"/spec/{key}", f"{key} must be a string.")
    validate_custom_agent_text(
        spec.get("instructions"),
        spec.get("handoffDescription"),
        problems,
        instructions_at="/spec/instructions",
        handoff_at="/spec/handoffDescription",
    )
    if "enableVanillaMode" in spec and not isinstance(spec["enableVanillaMode"], bool):
        problems.error("/spec/enableVanillaMode", "enableVanillaMode must be true or false.")
    hooks, hook_problems = validate_hooks_map(spec.get("hooks"), base="/spec/hooks")
    problems.merge(hook_problems)

    if problems.errors:
        raise problems.refusal()
    return CustomAgentDocument(
        name=name,
        instructions=spec.get("instructions") or "",
        handoff_description=spec.get("handoffDescription") or "",
        enable_vanilla_mode=bool(spec.get("enableVanillaMode", False)),
        hooks=hooks,
        warnings=problems.warnings,
    )


def hooks_document(hooks: list[HookInput]) -> dict[str, list[dict[str, Any]]]:
    """Hooks in order → `{event: [hook, ...]}` with only used events."""
    out: dict[str, list[dict[str, Any]]] = {}
    for hook in hooks:
        item = {**hook.definition, "name": hook.name, "mode": hook.mode}
        if hook.description:
            item["description"] = hook.description
        if not hook.enabled:
            item["enabled"] = False
        if hook.record_reason:
            item["recordReason"] = True
        out.setdefault(hook.event, []).append(order_hook_keys(item))
    return {event: out[event] for event in EVENTS if event in out}


def custom_agent_document(
    *,
    name: str,
    instructions: str,
    handoff_description: str,
    enable_vanilla_mode: bool,
    hooks: list[HookInput],
) -> dict[str, Any]:
    return {
        "api_version": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {
            "instructions": instructions,
            "handoffDescription": handoff_description,
            "enableVanillaMode": enable_vanilla_mode,
            "hooks": hooks_document(hooks),
        },
    }
