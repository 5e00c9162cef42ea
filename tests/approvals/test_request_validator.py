"""The approval request validator: `jsonschema` (the reference) and the compiled accelerator
agree, and the accelerator never accepts what the reference refuses (approvals.validation)."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from agent_hooks import AgentContextBuilder, Verdict
from agent_hooks.canonical import context_identity

from approvals import validation


def _request(point: str, context: dict[str, Any] | None, verdict: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "context_identity": context_identity(context) if context else None,
        "interception_point": point,
        "verdict": verdict,
    }
    if context is not None:
        request["context"] = context
    return request


def valid_requests() -> list[dict[str, Any]]:
    builder = AgentContextBuilder(
        agent_id="sre-agent", framework="agent_framework", session_id="s1"
    )
    builder.agent_startup(tools_registered=["restart_service"])
    contexts = {
        "pre_tool_call": builder.pre_tool_call(
            call_id="c1", name="restart_service", args={"service": "api", "n": [1, 2.5, None]}
        ),
        "post_tool_call": builder.post_tool_call(
            call_id="c1", name="restart_service", args={"service": "api"}, value={"ok": True}
        ),
        "pre_model_call": builder.pre_model_call(
            model_id="m", messages=[{"role": "user", "content": "restart the api"}]
        ),
        "input": builder.input(content="restart the api, please"),
    }
    escalate = Verdict.escalate(reason="approval_required", message="needs a human").to_wire()
    verdicts = [
        escalate,
        {**escalate, "approval": {"hook": "a1b2c3"}},
        {
            **escalate,
            "warnings": [{"reason": "w", "message": None}],
            "result_labels": ["pii"],
            "evidence": {"artefact": "sha256:" + "0" * 64},
        },
        {"decision": "deny", "reason": None, "message": None, "approval": {}},
        {"decision": "deny", "reason": "host_error:timeout"},  # host-synthesized (§7.5)
        {"decision": "deny", "reason": "two\nlines", "message": "ünïcode ✓"},
    ]
    requests = [_request(point, dict(context), escalate) for point, context in contexts.items()]
    requests += [_request("pre_tool_call", dict(contexts["pre_tool_call"]), v) for v in verdicts]
    requests.append(_request("pre_tool_call", None, escalate))
    return requests


def _mutations() -> list[Any]:
    def context(change):
        return lambda r: change(r["context"])

    return [
        lambda r: r.pop("verdict"),
        lambda r: r.pop("interception_point"),
        lambda r: r.update(extra=1),
        lambda r: r.update(context_identity=5),
        lambda r: r.update(interception_point="pre_everything"),
        lambda r: r["verdict"].update(decision="allow"),
        lambda r: r["verdict"].update(decision="escalate"),
        lambda r: r["verdict"].update(reason=["approval_required"]),
        lambda r: r["verdict"].update(message=7),
        lambda r: r["verdict"].update(unknown=True),
        lambda r: r["verdict"].update(warnings=[{"reason": "host_error:x"}]),
        lambda r: r["verdict"].update(warnings=[{"reason": "w", "extra": 1}]),
        lambda r: r["verdict"].update(result_labels=[1]),
        lambda r: r["verdict"].update(transform={"path": "$target.x"}),
        lambda r: r["verdict"].update(approval=[]),
        lambda r: r["verdict"].update(evidence={"artefact": {"x": 1}}),
        lambda r: r["verdict"].update(evidence={"other": 1}),
        lambda r: r.update(context="not an object"),
        context(lambda c: c.pop("interception_point")),
        context(lambda c: c.update(interception_point="post_tool_call")),
        context(lambda c: c.update(spec="agent-hooks/one")),
        context(lambda c: c.update(timestamp=12)),
        context(lambda c: c.update(sequence="one")),
        context(lambda c: c.pop("tool_call")),
        context(lambda c: c["tool_call"].update(name=None)),
        context(lambda c: c["tool_call"].update(args="a string")),
        context(lambda c: c["agent"].pop("id")),
    ]


def corpus() -> list[tuple[dict[str, Any], bool]]:
    cases = [(request, True) for request in valid_requests()]
    base = valid_requests()[0]  # pre_tool_call, with its context
    for mutate in _mutations():
        request = copy.deepcopy(base)
        mutate(request)
        cases.append((request, False))
    return cases


@pytest.mark.parametrize(("request_wire", "valid"), corpus())
def test_reference_and_accelerator_agree(request_wire, valid):
    reason = (request_wire.get("verdict") or {}).get("reason") or ""
    request_ok = validation.sdk_validator("approval.schema.json", "request").is_valid(request_wire)
    verdict_ok = (
        not isinstance(request_wire.get("verdict"), dict)
        or str(reason).startswith("host_error:")
        or validation.sdk_validator("verdict.schema.json").is_valid(request_wire["verdict"])
    )
    assert (request_ok and verdict_ok) is valid
    fast = validation.sdk_fast_validator("approval.schema.json", "request")
    assert fast.is_valid(request_wire) is request_ok
    if isinstance(request_wire.get("verdict"), dict):
        verdict = request_wire["verdict"]
        reference = validation.sdk_validator("verdict.schema.json").is_valid(verdict)
        assert validation.sdk_fast_validator("verdict.schema.json").is_valid(verdict) is reference
    assert (validation.validate_request(request_wire) == {}) is valid


def test_what_the_accelerator_refuses_the_reference_decides_and_explains():
    """A pattern's `$` in Python matches before a final newline, in ECMA 262 it does not: the
    accelerator refuses, the reference accepts, and the reference's verdict stands."""
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^[a-z]+$"}}}
    assert jsonschema.Draft202012Validator(schema).is_valid({"v": "abc\n"})
    assert not jsonschema_rs.Draft202012Validator(schema).is_valid({"v": "abc\n"})
    request = valid_requests()[0]
    request["context"]["spec"] += "\n"
    assert not validation.sdk_fast_validator("approval.schema.json", "request").is_valid(request)
    assert validation.sdk_validator("approval.schema.json", "request").is_valid(request)
    assert validation.validate_request(request) == {}
    request["verdict"]["decision"] = "allow"
    assert validation.validate_request(request) == {
        "/request/verdict/decision": ["'deny' was expected"]
    }


def test_validators_are_compiled_once_per_process():
    for schema_file, definition in (
        ("approval.schema.json", "request"),
        ("verdict.schema.json", None),
    ):
        assert validation.sdk_fast_validator(schema_file, definition) is (
            validation.sdk_fast_validator(schema_file, definition)
        )
