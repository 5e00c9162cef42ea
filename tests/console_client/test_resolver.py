"""The console resolver's wire: what it sends, how it reads answers, when it raises."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest
from agent_hooks import (
    AgentContextBuilder,
    ApprovalOutcome,
    ApprovalRequest,
    InterceptionPoint,
    Verdict,
    context_identity,
)
from agent_hooks.ctk._schemas import per_point_registry

from console_client.resolver import ConsoleResolver, ResolverError
from tests.console_client.scripted_http import ScriptedHTTP

pytestmark = pytest.mark.asyncio

META = {"custom_agent": None, "hook": "hk_abc", "tool_name": "restart_service"}


def make_request() -> ApprovalRequest:
    builder = AgentContextBuilder(
        agent_id="sre-agent", framework="agent-framework", session_id="s1"
    )
    context = builder.pre_tool_call(call_id="c1", name="restart_service", args={"service": "api"})
    verdict = Verdict.escalate(reason="console:approval_required", message="needs approval")
    return ApprovalRequest(
        context_identity=context_identity(context),
        interception_point=InterceptionPoint.PRE_TOOL_CALL,
        verdict=verdict,
        context=context,
    )


@pytest.fixture
def console():
    server = ScriptedHTTP().start()
    yield server
    server.stop()


def resolver_for(server: ScriptedHTTP) -> ConsoleResolver:
    return ConsoleResolver(
        http=lambda: httpx.AsyncClient(base_url=server.url, timeout=5),
        meta=lambda request: dict(META),
        long_poll_seconds=1,
    )


CREATED = (201, {"id": "e1", "status": "pending", "expires_at": "2999-01-01T00:00:00Z"})


def answer(status: str, **extra):
    return (200, {"id": "e1", "status": status, "resolution": None, "reason": "", **extra})


async def test_request_is_the_sdk_wire_and_polls_until_decided(console):
    console.route("POST", "/api/v1/escalations", CREATED)
    console.route("GET", "/api/v1/escalations/e1", answer("pending"), answer("approved"))
    request = make_request()
    before = json.dumps(request.context, sort_keys=True)
    resolution = await resolver_for(console).resolve(request)
    assert resolution.outcome is ApprovalOutcome.APPROVE
    assert resolution.context_identity == request.context_identity
    assert json.dumps(request.context, sort_keys=True) == before  # never mutated
    posted = console.seen[0].body
    assert posted["meta"] == META
    validator = jsonschema.Draft202012Validator(
        {"$ref": "approval.schema.json#/$defs/request"}, registry=per_point_registry()
    )
    validator.validate(posted["request"])
    polls = [s for s in console.seen if s.method == "GET"]
    assert len(polls) == 2 and polls[0].query["wait"] == ["1"]


async def test_rejected_is_a_reject_with_the_reviewers_reason(console):
    console.route("POST", "/api/v1/escalations", CREATED)
    console.route("GET", "/api/v1/escalations/e1", answer("rejected", reason="not now"))
    resolution = await resolver_for(console).resolve(make_request())
    assert resolution.outcome is ApprovalOutcome.REJECT
    assert resolution.verdict.reason == "reviewer_rejected"
    assert resolution.verdict.message == "not now"


async def test_expired_is_a_reject_approval_expired(console):
    console.route("POST", "/api/v1/escalations", (200, {"id": "e1", "status": "expired"}))
    resolution = await resolver_for(console).resolve(make_request())
    assert resolution.verdict.reason == "approval_expired"


async def test_an_approved_resolution_wire_with_a_transform_is_parsed(console):
    request = make_request()
    wire = {
        "outcome": "approve",
        "context_identity": request.context_identity,
        "verdict": {
            "decision": "transform",
            "transform": {"path": "$target", "value": {"service": "x"}},
        },
    }
    console.route("POST", "/api/v1/escalations", CREATED)
    console.route("GET", "/api/v1/escalations/e1", answer("approved", resolution=wire))
    resolution = await resolver_for(console).resolve(request)
    assert resolution.verdict.transform.value == {"service": "x"}


@pytest.mark.parametrize(
    "get_answer",
    [
        (500, {"error": "boom"}),
        (200, b"not json"),
        (200, {"id": "e1", "status": "weird"}),
        answer(
            "approved",
            resolution={
                "outcome": "approve",
                "context_identity": "sha256:other",
                "verdict": {"decision": "allow"},
            },
        ),
        answer(
            "rejected",
            resolution={
                "outcome": "approve",
                "context_identity": None,
                "verdict": {"decision": "allow"},
            },
        ),
    ],
    ids=["5xx", "broken-json", "unknown-status", "identity-mismatch", "outcome-mismatch"],
)
async def test_broken_answers_raise_so_the_sdk_fails_closed(console, get_answer):
    console.route("POST", "/api/v1/escalations", CREATED)
    console.route("GET", "/api/v1/escalations/e1", get_answer)
    with pytest.raises(ResolverError):
        await resolver_for(console).resolve(make_request())


async def test_unreachable_console_raises():
    resolver = ConsoleResolver(
        http=lambda: httpx.AsyncClient(base_url="http://127.0.0.1:9", timeout=1),
        meta=lambda request: {},
    )
    with pytest.raises(ResolverError):
        await resolver.resolve(make_request())
