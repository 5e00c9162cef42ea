"""Approvals fixtures: real SDK approval requests, approval hooks, and a way to escalate."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from agent_hooks import AgentContextBuilder, Verdict
from agent_hooks.canonical import context_identity
from django.contrib.auth.models import Group, User
from django.db import connections
from django.test import Client

from agents import services as agent_services
from agents.models import Hook
from approvals.models import Escalation
from approvals.validation import sdk_validator
from tests.conftest import AgentWithToken

_sessions = itertools.count(1)


TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "minLength": 1},
        "replicas": {"type": "integer", "minimum": 0, "maximum": 20},
    },
    "required": ["service"],
    "additionalProperties": False,
}


def approval_request(
    tool: str = "restart_service",
    args: dict[str, Any] | None = None,
    *,
    hook_key: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """An approval request wire as the SDK builds it at pre_tool_call (content-bound id)."""
    builder = AgentContextBuilder(
        agent_id="sre-agent",
        framework="agent_framework",
        session_id=session_id or f"sess-{next(_sessions)}",
    )
    builder.agent_startup(tools_registered=[tool])
    context = builder.pre_tool_call(
        call_id="call-1", name=tool, args=args if args is not None else {"service": "api"}
    )
    verdict = Verdict.escalate(reason="approval_required", message=f"{tool} needs approval")
    wire = verdict.to_wire()
    if hook_key:
        wire["approval"] = {"hook": hook_key}
    return {
        "context_identity": context_identity(dict(context)),
        "interception_point": "pre_tool_call",
        "verdict": wire,
        "context": dict(context),
    }


def resolution_errors(wire: Any) -> list[str]:
    validator = sdk_validator("approval.schema.json", "resolution")
    return [error.message for error in validator.iter_errors(wire)]


def approval_hook(agent_with_token: AgentWithToken, **options: Any) -> Hook:
    raw = {"type": "approval", "matcher": "restart_service|scale_deployment", **options}
    hook, _warnings = agent_services.hook_create(
        actor=None, agent=agent_with_token.agent, custom_agent=None, event="PreToolUse", raw=raw
    )
    return hook


def ensure_approval_hook(agent_with_token: AgentWithToken) -> None:
    """The console accepts an escalation only for a call an approval hook matches."""
    approvals = Hook.objects.filter(
        agent=agent_with_token.agent, event="PreToolUse", definition__type="approval"
    )
    if not approvals.exists():
        approval_hook(agent_with_token)


def post_escalation(
    client: Client, agent: AgentWithToken, request: dict[str, Any], **meta: Any
) -> Any:
    return client.post(
        "/api/v1/escalations",
        data=json.dumps({"request": request, "meta": meta}),
        content_type="application/json",
        **agent.headers(),
    )


def in_own_thread(function: Callable[..., Any]) -> Callable[..., Any]:
    """Run `function` as another request would: its own thread and DB connection."""

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    return run


@pytest.fixture
def escalate(sre: AgentWithToken) -> Callable[..., Escalation]:
    """Create one escalation for `sre` through the API; returns the stored row."""

    def make(
        tool: str = "restart_service",
        args: dict[str, Any] | None = None,
        agent: AgentWithToken | None = None,
        **meta: Any,
    ) -> Escalation:
        ensure_approval_hook(agent or sre)
        response = post_escalation(Client(), agent or sre, approval_request(tool, args), **meta)
        assert response.status_code == 201, response.content
        return Escalation.objects.get(pk=response.json()["id"])

    return make


def make_reviewer(username: str) -> User:
    """A reviewer without a password hash (fast to create in bulk)."""
    user = User.objects.create_user(username=username)
    user.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    return user
