"""Real InterceptionRecord wires for tests, produced by the SDK itself.

`sdk_session(calls=[...])` runs one hooks session through `agent_hooks.InterceptionEmitter`
(contexts from `AgentContextBuilder`, records captured by a `record_sink`) and returns the
record wires, agent_startup … agent_shutdown. Each tool name in `calls` picks what the
policy interceptors do at its pre_tool_call:

    "ls"      allow                          → outcome allowed
    "audit"   allow + warning                → warned
    "rm"      plain deny                     → denied
    "redact"  transform of the tool args     → transformed
    "crash"   the interceptor raises         → host_error (host_error:interceptor_failed)
    "deploy"  liftable deny → the resolver   → approved / rejected / expired (per `approval`)

`items(wires, **meta)` wraps them as POST /api/v1/records items.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from agent_hooks import (
    AgentContextBuilder,
    ApprovalOutcome,
    ApprovalResolution,
    EnforcementMode,
    InterceptionEmitter,
    InterceptionRecord,
    Verdict,
)

GUARD_HOOK = "hk_guard0001"
AUDIT_HOOK = "hk_audit0002"


class _Guard:
    def intercept(self, context: dict[str, Any]) -> Verdict:
        if context["interception_point"] != "pre_tool_call":
            return Verdict.allow()
        name = context["tool_call"]["name"]
        if name == "rm":
            return Verdict.deny(reason="dangerous_command", message="rm -rf is blocked")
        if name == "deploy":
            return Verdict.escalate(reason="needs_approval", message="deploys need a reviewer")
        if name == "crash":
            raise RuntimeError("hook script failed")
        if name == "redact":
            return Verdict.from_wire(
                {"decision": "transform", "transform": {"path": "$target.secret", "value": "***"}}
            )
        return Verdict.allow()


class _Audit:
    def intercept(self, context: dict[str, Any]) -> Verdict:
        if context.get("tool_call", {}).get("name") == "audit":
            return Verdict.warn(reason="audited_tool", message="[AUDIT] Tool 'audit' was executed.")
        return Verdict.allow()


class _Resolver:
    """Answers like console_client.resolver does for a reviewer's decision."""

    def __init__(self, approval: str) -> None:
        self.approval = approval

    def resolve(self, request: Any) -> ApprovalResolution:
        identity = request.context_identity
        if self.approval == "approve":
            return ApprovalResolution(ApprovalOutcome.APPROVE, identity, Verdict.allow())
        reason = "approval_expired" if self.approval == "expire" else "reviewer_rejected"
        return ApprovalResolution(
            ApprovalOutcome.REJECT, identity, Verdict.deny(reason=reason, message="no")
        )


async def _run(
    calls: list[str], session_id: str, approval: str, mode: EnforcementMode
) -> list[dict[str, Any]]:
    wires: list[dict[str, Any]] = []

    def sink(record: InterceptionRecord) -> None:
        wires.append(record.to_wire())

    emitter = InterceptionEmitter(mode=mode, resolver=_Resolver(approval))
    emitter.register(_Guard(), name=GUARD_HOOK)
    emitter.register(_Audit(), name=AUDIT_HOOK)
    emitter.set_record_sink(sink)
    builder = AgentContextBuilder(
        agent_id="sre-agent", framework="agent_framework", session_id=session_id
    )
    await emitter.emit_unchecked(builder.agent_startup(tools_registered=sorted(set(calls))))
    await emitter.emit_unchecked(builder.input(content="please fix the disk"))
    for index, name in enumerate(calls):
        args = {"command": f"{name} /tmp", "secret": "s3cr3t"}
        await emitter.emit_unchecked(
            builder.pre_tool_call(call_id=f"c{index}", name=name, args=args)
        )
    await emitter.emit_unchecked(builder.output(content="Task complete."))
    await emitter.emit_unchecked(builder.agent_shutdown(reason="completed"))
    return wires


def sdk_session(
    calls: list[str] | None = None,
    *,
    session_id: str | None = None,
    approval: str = "approve",
    mode: EnforcementMode = EnforcementMode.ENFORCE,
) -> list[dict[str, Any]]:
    """Record wires of one session (2 + len(calls) + 2 records)."""
    return asyncio.run(_run(calls or ["ls"], session_id or str(uuid.uuid4()), approval, mode))


def items(wires: list[dict[str, Any]], **meta: Any) -> list[dict[str, Any]]:
    return [{"record": wire, "meta": dict(meta)} for wire in wires]


def tool_items(calls: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    """Items of one session where each pre_tool_call item carries meta.tool_name."""
    wires = sdk_session(calls, **kwargs)
    out = items(wires, framework="agent_framework", revision=3)
    tool_calls = iter(calls)
    for item in out:
        if item["record"]["interception_point"] == "pre_tool_call":
            item["meta"]["tool_name"] = next(tool_calls)
    return out
