"""Validation of escalation requests and decisions: pure functions over plain JSON values.

The approval request is checked against the SDK's own `approval.schema.json` (`$defs/request`,
with its `$ref`s resolved from the installed agent_hooks package). Errors are keyed by JSON
pointer, as everywhere in the console's API.

`jsonschema` is the reference and the error reporter (0.65 ms for a request). The same
schemas compiled by `jsonschema_rs` accept a valid request in a few microseconds; what that
accelerator refuses is checked again by `jsonschema`, whose verdict stands, so it can never
refuse what the reference accepts (audit.ingest does the same for records;
tests/approvals/test_request_validator.py checks that the two agree).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import agent_hooks
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from approvals.models import VoteOutcome
from console.errors import InvalidInput, pointer

SCHEMA_DIR = Path(agent_hooks.__file__).parent / "schema"
META_KEYS = (
    "custom_agent", "hook", "tool_name", "session_id", "turn", "transcript", "tool_schema",
    "framework", "revision", "cwd",
)  # fmt: skip
META_TEXT_LIMITS = {
    "custom_agent": 64, "hook": 32, "tool_name": 200, "session_id": 200, "framework": 64,
    "cwd": 1024,
}  # fmt: skip
TRANSCRIPT_MAX_BYTES = 16 * 1024
TOOL_SCHEMA_MAX_BYTES = 64 * 1024
IDENTITY_MAX_CHARS = 512
# The escalation row keeps the verdict's reason in a 200-character column, and its message
# for the reviewer: console_client's hooks give at most 8 KiB of reason (runners.py).
VERDICT_REASON_MAX_CHARS = 200
VERDICT_MESSAGE_MAX_CHARS = 16 * 1024
COUNT_MAX = 2**31 - 1  # turn and revision columns
DECISION_KEYS = ("outcome", "reason", "args")
REASON_MAX_CHARS = 2000
MAX_ERRORS = 20


@functools.cache
def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMA_DIR.rglob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append((contents["$id"], Resource.from_contents(contents)))
    registry: Registry = Registry().with_resources(resources)
    return registry


@functools.cache
def sdk_validator(schema_file: str, definition: str | None = None) -> Validator:
    """A validator for one SDK schema (or one of its `$defs`), $refs resolved locally."""
    return Draft202012Validator(
        {"$ref": _schema_ref(schema_file, definition)}, registry=_registry()
    )


def _schema_ref(schema_file: str, definition: str | None) -> str:
    schema_id = json.loads((SCHEMA_DIR / schema_file).read_text(encoding="utf-8"))["$id"]
    return f"{schema_id}#/$defs/{definition}" if definition else schema_id


@functools.cache
def sdk_fast_validator(schema_file: str, definition: str | None = None) -> Any:
    """The same schema compiled by jsonschema_rs: its `is_valid` may only accept."""
    import jsonschema_rs

    documents = [(uri, resource.contents) for uri, resource in _registry().items()]
    return jsonschema_rs.Draft202012Validator(
        {"$ref": _schema_ref(schema_file, definition)},
        registry=jsonschema_rs.Registry(documents),
    )


def sdk_schema_errors(
    schema_file: str, definition: str | None, instance: Any, *base: str | int
) -> dict[str, list[str]]:
    """schema_errors against an SDK schema: none when the accelerator accepts `instance`."""
    if sdk_fast_validator(schema_file, definition).is_valid(instance):
        return {}
    return schema_errors(sdk_validator(schema_file, definition), instance, *base)


def _short(message: str, limit: int = 240) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def schema_errors(validator: Validator, instance: Any, *base: str | int) -> dict[str, list[str]]:
    """Schema errors of `instance` keyed by pointer (prefixed with `base`)."""
    fields: dict[str, list[str]] = {}
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.path)))
    except Unresolvable as exc:
        return {pointer(*base): [f"The schema has a reference that cannot be resolved: {exc}"]}
    for error in errors[:MAX_ERRORS]:
        fields.setdefault(pointer(*base, *error.absolute_path), []).append(_short(error.message))
    return fields


def validate_request(request: Any) -> dict[str, list[str]]:
    """Errors of an approval request wire (approval.schema.json `$defs/request`)."""
    fields = sdk_schema_errors("approval.schema.json", "request", request, "request")
    if fields or not isinstance(request, dict):
        return fields
    identity = request.get("context_identity")
    if isinstance(identity, str) and len(identity) > IDENTITY_MAX_CHARS:
        fields[pointer("request", "context_identity")] = [
            f"context_identity is longer than {IDENTITY_MAX_CHARS} characters."
        ]
    verdict = request["verdict"]
    for key, limit in (
        ("reason", VERDICT_REASON_MAX_CHARS),
        ("message", VERDICT_MESSAGE_MAX_CHARS),
    ):
        value = verdict.get(key)
        if isinstance(value, str) and len(value) > limit:
            fields[pointer("request", "verdict", key)] = [f"Must be at most {limit} characters."]
    # The SDK schema checks an interceptor's verdict against §5 only when it is not a
    # host-synthesized host_error:* deny (whose reason §5 forbids).
    if not str(verdict.get("reason") or "").startswith("host_error:"):
        fields.update(sdk_schema_errors("verdict.schema.json", None, verdict, "request", "verdict"))
    context = request.get("context")
    if isinstance(context, dict) and context.get("interception_point") not in (
        None,
        request["interception_point"],
    ):
        fields[pointer("request", "context", "interception_point")] = [
            "The context's interception_point differs from the request's."
        ]
    return fields


def _text(meta: dict[str, Any], key: str, fields: dict[str, list[str]]) -> None:
    value = meta[key]
    if not isinstance(value, str):
        fields[pointer("meta", key)] = ["Must be a string."]
    elif len(value) > META_TEXT_LIMITS[key]:
        fields[pointer("meta", key)] = [f"Must be at most {META_TEXT_LIMITS[key]} characters."]


def _count(meta: dict[str, Any], key: str, fields: dict[str, list[str]]) -> None:
    value = meta[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= COUNT_MAX:
        fields[pointer("meta", key)] = [f"Must be an integer from 0 to {COUNT_MAX}."]


def validate_meta(meta: Any) -> dict[str, list[str]]:
    """Errors of the envelope `meta`: only known keys, each of the right type and size."""
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        return {pointer("meta"): ["Must be an object."]}
    fields: dict[str, list[str]] = {}
    unknown = sorted(set(meta) - set(META_KEYS))
    if unknown:
        fields[pointer("meta")] = [
            f"Unknown key(s): {', '.join(unknown)}. Allowed: {', '.join(META_KEYS)}."
        ]
        for key in unknown:
            fields[pointer("meta", key)] = ["Unknown key."]
    for key in META_KEYS:
        if key not in meta or meta[key] is None:
            continue
        if key in META_TEXT_LIMITS:
            _text(meta, key, fields)
        elif key in ("turn", "revision"):
            _count(meta, key, fields)
        elif key == "transcript":
            value = meta[key]
            if not isinstance(value, str):
                fields[pointer("meta", key)] = ["Must be a string."]
            elif len(value.encode("utf-8")) > TRANSCRIPT_MAX_BYTES:
                fields[pointer("meta", key)] = [
                    f"Must be at most {TRANSCRIPT_MAX_BYTES} bytes (send the recent part)."
                ]
        elif key == "tool_schema":
            problem = tool_schema_problem(meta[key])
            if problem:
                fields[pointer("meta", key)] = [problem]
    return fields


def tool_schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return "Must be a JSON schema object."
    if len(json.dumps(schema, separators=(",", ":")).encode("utf-8")) > TOOL_SCHEMA_MAX_BYTES:
        return f"Must be at most {TOOL_SCHEMA_MAX_BYTES} bytes as JSON."
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        return _short(f"Not a valid JSON schema: {exc.message}")
    return None


def validate_arguments(args: Any, tool_schema: dict[str, Any] | None) -> dict[str, list[str]]:
    """Errors of reviewer-edited tool arguments: a JSON object that fits the tool's schema."""
    if not isinstance(args, dict):
        return {pointer("args"): ["Arguments must be a JSON object."]}
    if not tool_schema:
        return {}
    cls = validator_for(tool_schema, default=Draft202012Validator)
    return schema_errors(cls(tool_schema), args, "args")


def parse_decision(body: Any) -> tuple[str, str, Any]:
    """(outcome, reason, args or None) from a decision body; raise InvalidInput on errors."""
    if not isinstance(body, dict):
        raise InvalidInput("The body must be a JSON object.", fields={"": ["Must be an object."]})
    fields: dict[str, list[str]] = {}
    unknown = sorted(set(body) - set(DECISION_KEYS))
    for key in unknown:
        fields[pointer(key)] = [f"Unknown key. Allowed: {', '.join(DECISION_KEYS)}."]
    outcome = body.get("outcome")
    if outcome not in VoteOutcome.values:
        fields[pointer("outcome")] = ["Must be 'approve' or 'reject'."]
    reason = body.get("reason", "")
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        fields[pointer("reason")] = ["Must be a string."]
        reason = ""
    elif len(reason) > REASON_MAX_CHARS:
        fields[pointer("reason")] = [f"Must be at most {REASON_MAX_CHARS} characters."]
    if fields:
        raise InvalidInput("The decision is invalid.", fields=fields)
    return str(outcome), reason.strip(), body.get("args")
