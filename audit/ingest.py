"""Record ingest, the pure part: validate a posted batch into `ValidItem`s, whose stored
columns `audit.record_rows` derives when they are written.

Each item is `{"record": <InterceptionRecord wire>, "meta": {...}}`. `record` must pass the
SDK's own `interception-record.schema.json` (loaded from the installed `agent_hooks`
package, Draft 2020-12, its `$ref`s resolved through a `referencing` registry) together
with `CONSOLE_RECORD_RULES`: the console's payload-free tightening of the record (the SDK
schema leaves `verdict` open and its strings unbounded; the console needs
`verdict.decision`, allows only the members and the `evidence` shape the SDK's projection
produces, and bounds every string and array, see `RECORD_LIMITS`). `meta` takes only
`custom_agent`, `tool_name`, `framework`, `revision`.

One deliberate difference from the SDK file: its rule "`verdicts` is REQUIRED in
multi-verdict profiles" is not applied to a host-synthesized verdict (`reason`
`host_error:*`). The SDK's own emitter writes such records without `verdicts` whenever no
interceptor ran or finished (a cancelled emission, `record_host_failure`, an invalid
context, no interceptor bound) and they are the records an auditor needs most, so the
console stores them (`_record_document`).

Validation speed: `jsonschema` (the reference, also the error reporter) takes ~200 µs per
record; when `jsonschema_rs` is importable the same combined schema is compiled with it
too and used to accept valid records (~3 µs). A record it rejects is re-checked by
`jsonschema`, whose verdict stands and whose error names the field, so the accelerator
can never refuse a record the reference accepts. Error messages never quote the
offending value (it may be a 200 KB string or a password).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agent_hooks
import jsonschema
import referencing
from referencing.jsonschema import DRAFT202012

from audit.record_rows import HOST_ERROR_PREFIX, ValidItem, parse_timestamp
from console.errors import InvalidInput, pointer

MAX_BATCH = 1000
SCHEMA_DIR = Path(agent_hooks.__file__).parent / "schema"
RECORD_SCHEMA_FILE = "interception-record.schema.json"
META_KEYS: dict[str, int] = {"custom_agent": 64, "tool_name": 200, "framework": 64, "revision": 64}
ITEM_KEYS = frozenset({"record", "meta"})
BIGINT_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
# Reasons the console's resolver (console_client.resolver) puts on a rejecting verdict.

# Bounds of the record wire (characters; arrays in items). The SDK bounds none of these
# except the messages (256 UTF-8 bytes, then "…": at most 257 characters) and the evidence
# (10 KB canonical, strings only); console_client's own reasons are short identifiers.
# Columns that store a member directly keep their column's size (session_id 200, ...).
RECORD_LIMITS: dict[str, int] = {
    "session_id": 200,
    "identity": 200,
    "identity_provider": 64,
    "timestamp": 64,
    "declaration": 64,
    "trace_id": 256,
    "reason": 1024,
    "message": 257,
    "transform_path": 1024,
    "hook_name": 128,
    "label": 256,
    "labels": 256,
    "warnings": 1024,
    "verdicts": 1024,
    "evidence_uri": 2048,
    "evidence_pointer_name": 256,
    "evidence_pointers": 32,
}
_L = RECORD_LIMITS


def _text(limit: str, *, nullable: bool = False) -> dict[str, Any]:
    return {"type": ["string", "null"] if nullable else "string", "maxLength": _L[limit]}


# The SDK's evidence shape (verdict.schema.json $defs/evidence, which its core enforces):
# an artefact (content address or URI) and named URIs; anything else is refused.
_EVIDENCE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "artefact": _text("evidence_uri", nullable=True),
        "verification_pointers": {
            "type": "object",
            "maxProperties": _L["evidence_pointers"],
            "propertyNames": {"maxLength": _L["evidence_pointer_name"]},
            "additionalProperties": _text("evidence_uri"),
        },
    },
}
CONSOLE_RECORD_RULES: dict[str, Any] = {
    "$id": "urn:console:record-rules",
    "type": "object",
    "properties": {
        "session_id": {"maxLength": _L["session_id"]},
        "sequence": {"minimum": -(2**63), "maximum": BIGINT_MAX},
        "input_identity": {"maxLength": _L["identity"]},
        "enforced_identity": {"maxLength": _L["identity"]},
        "identity_provider": {"maxLength": _L["identity_provider"]},
        "timestamp": {"maxLength": _L["timestamp"]},
        "declaration": {"maxLength": _L["declaration"]},
        "trace": {
            "properties": {
                "trace_id": {"maxLength": _L["trace_id"]},
                "span_id": {"maxLength": _L["trace_id"]},
            }
        },
        "decided_by": {"maximum": INT_MAX},
        "interceptors_registered": {"maximum": INT_MAX},
        "verdict": {
            "type": "object",
            "required": ["decision"],
            "additionalProperties": False,
            "properties": {
                "decision": {"enum": ["allow", "deny", "transform"]},
                "reason": _text("reason", nullable=True),
                "message": _text("message", nullable=True),
                "warnings": {
                    "type": ["array", "null"],
                    "maxItems": _L["warnings"],
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "reason": _text("reason", nullable=True),
                            "message": _text("message", nullable=True),
                        },
                    },
                },
                "approval": {"type": "object"},
                "transform": {
                    "type": "object",
                    "properties": {"path": {"maxLength": _L["transform_path"]}},
                },
                "evidence": _EVIDENCE,
                "result_labels": {
                    "type": ["array", "null"],
                    "maxItems": _L["labels"],
                    "items": _text("label"),
                },
            },
        },
        "verdicts": {
            "maxItems": _L["verdicts"],
            "items": {
                "properties": {
                    "index": {"maximum": INT_MAX},
                    "name": {"maxLength": _L["hook_name"]},
                    "reason": _text("reason", nullable=True),
                },
            },
        },
    },
}


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pointer(parts: Any) -> str:
    # A member name longer than any the record allows is cut: the answer stays small.
    return pointer(*(_short(str(part), 256) for part in parts))


@functools.cache
def _schema_documents() -> dict[str, dict[str, Any]]:
    """The SDK's schema files, verbatim, by file name."""
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        documents[path.name] = document
    return documents


# Added to the `if` of the SDK's multi-verdict rule: it holds unless the verdict is
# host-synthesized (see the module docstring).
_NOT_HOST_SYNTHESIZED = {
    "properties": {
        "reason": {"not": {"type": "string", "pattern": f"^{HOST_ERROR_PREFIX}"}},
    }
}


@functools.cache
def _record_document() -> dict[str, Any]:
    """The SDK record schema, with its multi-verdict `verdicts` requirement not applied to
    host-synthesized verdicts. Fails loudly if an SDK upgrade changes that rule."""
    document: dict[str, Any] = copy.deepcopy(_schema_documents()[RECORD_SCHEMA_FILE])
    rules = [
        rule for rule in document.get("allOf", []) if rule.get("then") == {"required": ["verdicts"]}
    ]
    if len(rules) != 1 or "verdict" in rules[0]["if"].get("properties", {}):
        raise RuntimeError(f"{RECORD_SCHEMA_FILE} changed: review audit.ingest._record_document")
    rules[0]["if"]["properties"]["verdict"] = _NOT_HOST_SYNTHESIZED
    return document


def _registry_documents() -> list[tuple[str, dict[str, Any]]]:
    documents = [
        (doc["$id"], _record_document() if name == RECORD_SCHEMA_FILE else doc)
        for name, doc in _schema_documents().items()
    ]
    documents.append((CONSOLE_RECORD_RULES["$id"], CONSOLE_RECORD_RULES))
    return documents


@functools.cache
def record_schema() -> dict[str, Any]:
    """The SDK record schema AND the console rules, as one Draft 2020-12 schema."""
    sdk_id = _schema_documents()[RECORD_SCHEMA_FILE]["$id"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [{"$ref": sdk_id}, {"$ref": CONSOLE_RECORD_RULES["$id"]}],
    }


@functools.cache
def record_validator() -> jsonschema.Draft202012Validator:
    """The reference validator, compiled once per process."""
    resources = [
        (uri, referencing.Resource.from_contents(doc, default_specification=DRAFT202012))
        for uri, doc in _registry_documents()
    ]
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
    return jsonschema.Draft202012Validator(record_schema(), registry=registry)


@functools.cache
def record_fast_validator() -> Any:
    """The same schema compiled by jsonschema_rs, or None when it isn't installed."""
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - the reference validator alone still works
        return None
    registry = jsonschema_rs.Registry(_registry_documents())
    return jsonschema_rs.Draft202012Validator(record_schema(), registry=registry)


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    best = jsonschema.exceptions.best_match([error])
    return best if best is not None else error


def _message(error: jsonschema.ValidationError) -> str:
    """What is wrong, without quoting the value (jsonschema's own messages repeat it)."""
    kind, value = error.validator, error.validator_value
    if kind == "maxLength":
        return f"must be at most {value} characters."
    if kind == "maxItems":
        return f"must hold at most {value} items."
    if kind == "maxProperties":
        return f"must hold at most {value} members."
    if kind == "type":
        kinds = value if isinstance(value, list) else [value]
        return f"must be of type {' or '.join(map(str, kinds))}."
    if kind == "enum":
        return _short(f"must be one of: {', '.join(json.dumps(v) for v in value)}.")
    if kind == "const":
        return _short(f"must be {json.dumps(value)}.")
    if kind == "pattern":
        return _short(f"must match {value}.")
    if kind in ("minimum", "maximum"):
        return f"must be {'at least' if kind == 'minimum' else 'at most'} {value}."
    if kind in ("anyOf", "oneOf", "not", "if"):
        return "is not an allowed value here."
    return _short(error.message)


def record_errors(record: Any) -> list[tuple[str, str]]:
    """(pointer relative to the record, message) for each problem; [] when valid."""
    fast = record_fast_validator()
    if fast is not None and fast.is_valid(record):
        return []
    best = jsonschema.exceptions.best_match(record_validator().iter_errors(record))
    if best is None:
        return []
    error = _deepest(best)
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set((error.schema or {}).get("properties", {}))
        extra = sorted(key for key in error.instance if key not in allowed)
        if extra:
            return [(_pointer([*path, extra[0]]), "is not allowed here.")]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            return [(_pointer([*path, missing[0]]), f"{missing[0]!r} is required.")]
    if error.validator == "propertyNames":
        return [(_pointer(path), "has a member name that is too long or not allowed.")]
    return [(_pointer(path), _message(error))]


def _bad_strings(value: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    """Strings PostgreSQL can't store: NUL characters and unpaired surrogates."""
    if isinstance(value, str):
        if "\x00" in value:
            yield path, "contains a NUL character."
        else:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                yield path, "contains an unpaired UTF-16 surrogate."
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _bad_strings(key, [*path, key])
            yield from _bad_strings(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _bad_strings(item, [*path, index])


def body_needs_string_check(body: bytes) -> bool:
    """NULs and lone surrogates can only arrive as \\u escapes; skip the walk without one.
    Most bodies have no escape at all: one scan for it first, not three."""
    return b"\\u" in body and (b"\\u0000" in body or b"\\ud" in body or b"\\uD" in body)


def _meta_errors(meta: Any, check_strings: bool = True) -> list[tuple[str, str]]:
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return [("", "meta must be an object.")]
    errors: list[tuple[str, str]] = []
    for key, value in meta.items():
        if key not in META_KEYS:
            allowed = ", ".join(META_KEYS)
            errors.append((_pointer([key]), f"unknown meta key; allowed: {allowed}."))
        elif value is None:
            continue
        elif key == "revision" and isinstance(value, int) and not isinstance(value, bool):
            continue
        elif not isinstance(value, str):
            errors.append((_pointer([key]), "must be a string."))
        elif len(value) > META_KEYS[key]:
            errors.append((_pointer([key]), f"must be at most {META_KEYS[key]} characters."))
        elif check_strings:
            errors += [(_pointer([key]), message) for _p, message in _bad_strings(value, [])]
    return errors


def _item_errors(index: int, item: Any, check_strings: bool) -> list[tuple[str, str]]:
    if not isinstance(item, dict):
        return [(_pointer([index]), 'must be an object {"record": …, "meta": …}.')]
    errors = [
        (_pointer([index, key]), "unknown item key; allowed: record, meta.")
        for key in item
        if key not in ITEM_KEYS
    ]
    if "record" not in item:
        errors.append((_pointer([index, "record"]), "'record' is required."))
    else:
        record = item["record"]
        record_problems = record_errors(record)
        if not record_problems:
            stamp = parse_timestamp(record.get("timestamp"))
            if isinstance(stamp, str):
                record_problems = [("/timestamp", stamp)]
            elif check_strings:
                record_problems = [(_pointer(p), m) for p, m in _bad_strings(record, [])][:1]
        errors += [(_pointer([index, "record"]) + p, m) for p, m in record_problems]
    meta_problems = _meta_errors(item.get("meta"), check_strings)
    errors += [(_pointer([index, "meta"]) + p, m) for p, m in meta_problems]
    return errors


def _accepted_item(item: Any, check_strings: bool) -> ValidItem | None:
    """The hot path: an item that passes every check, else None (then `_item_errors`
    names what is wrong). Same checks as `_item_errors`, each value parsed once (the
    timestamp is handed on to the row)."""
    fast = record_fast_validator()
    if fast is None or type(item) is not dict or not ITEM_KEYS.issuperset(item):
        return None
    record = item.get("record")
    meta = item.get("meta")
    if record is None or not fast.is_valid(record) or _meta_errors(meta, check_strings):
        return None
    stamp = parse_timestamp(record.get("timestamp"))
    if isinstance(stamp, str) or (check_strings and next(_bad_strings(record, []), None)):
        return None
    return ValidItem(record, meta, stamp)


def batch_items(body: Any, *, check_strings: bool = True) -> list[ValidItem]:
    """Validate a whole posted batch; InvalidInput (naming item and field) or its items.
    `check_strings=False` skips the NUL/surrogate walk (see body_needs_string_check)."""
    if not isinstance(body, list):
        raise InvalidInput(
            "The body must be a JSON array of {record, meta} items.",
            fields={"": ["Expected a JSON array."]},
        )
    if not 1 <= len(body) <= MAX_BATCH:
        raise InvalidInput(
            f"A batch holds 1 to {MAX_BATCH} items; this one has {len(body)}.",
            fields={"": [f"Send 1 to {MAX_BATCH} items per request."]},
        )
    fields: dict[str, list[str]] = {}
    accepted: list[ValidItem] = []
    for index, item in enumerate(body):
        valid = None if fields else _accepted_item(item, check_strings)
        if valid is not None:
            accepted.append(valid)
            continue
        problems = _item_errors(index, item, check_strings)
        if problems:
            for pointer, message in problems:
                fields.setdefault(pointer, []).append(message)
            if len(fields) >= 20:
                break
            continue
        if not fields:
            record = item["record"]
            stamp = parse_timestamp(record.get("timestamp"))
            assert not isinstance(stamp, str)  # _item_errors refuses an unparseable one
            accepted.append(ValidItem(record, item.get("meta"), stamp))
    if fields:
        first = next(iter(fields))
        raise InvalidInput(
            f"Item {first.split('/')[1]} is invalid at {first}: {fields[first][0]} "
            "Nothing of this batch was stored.",
            fields=fields,
        )
    return accepted
