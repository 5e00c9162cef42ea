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
import contextlib
import uuid
from typing import Any

from agent_hooks import (
    AgentContextBuilder,
    ApprovalOutcome,
    ApprovalResolution,
    EnforcementMode,
    InterceptionEmitter,
    InterceptionPoint,
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


# ---- the SDK emitter's failure paths, under the console's composition (run_all) ---------


class _Hang:
    """Never answers: a hook still running, or a reviewer not deciding yet."""

    async def intercept(self, context: dict[str, Any]) -> Verdict:
        if context["interception_point"] != "pre_tool_call":
            return Verdict.allow()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def resolve(self, request: Any) -> ApprovalResolution:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


class _Escalate:
    def intercept(self, context: dict[str, Any]) -> Verdict:
        if context["interception_point"] == "pre_tool_call":
            return Verdict.escalate(reason="console:approval_required", message="needs a reviewer")
        return Verdict.allow()


class _Raise:
    def intercept(self, context: dict[str, Any]) -> Verdict:
        if context["interception_point"] == "pre_tool_call":
            raise RuntimeError("hook crashed")
        return Verdict.allow()

    def resolve(self, request: Any) -> ApprovalResolution:
        raise RuntimeError("console unreachable")


class _Junk:
    def intercept(self, context: dict[str, Any]) -> Any:
        if context["interception_point"] == "pre_tool_call":
            return {"decision": "maybe"}
        return Verdict.allow()


def _emitter(*interceptors: Any, resolver: Any = None, timeout: float = 5.0) -> Any:
    from agent_hooks import CompositionConfig

    emitter = InterceptionEmitter(
        resolver=resolver, timeout=timeout, composition=CompositionConfig.run_all()
    )
    emitter.register(_Audit(), name="console-base")
    for index, interceptor in enumerate(interceptors):
        emitter.register(interceptor, name=f"hk_fail{index:04d}")
    return emitter


async def _failure(path: str, session_id: str) -> list[dict[str, Any]]:
    wires: list[dict[str, Any]] = []
    emitter: Any
    if path == "cancelled_awaiting_reviewer":
        emitter = _emitter(_Escalate(), resolver=_Hang(), timeout=None)
    elif path == "cancelled_in_hook":
        emitter = _emitter(_Hang(), timeout=None)
    elif path == "interceptor_failed":
        emitter = _emitter(_Raise())
    elif path == "interceptor_timeout":
        emitter = _emitter(_Hang(), timeout=0.05)
    elif path == "verdict_invalid":
        emitter = _emitter(_Junk())
    elif path == "resolver_failed":
        emitter = _emitter(_Escalate(), resolver=_Raise())
    elif path == "resolver_timeout":
        emitter = _emitter(_Escalate(), resolver=_Hang(), timeout=0.05)
    else:
        emitter = _emitter()
    emitter.set_record_sink(lambda record: wires.append(record.to_wire()))
    builder = AgentContextBuilder(agent_id="sre-agent", framework="f", session_id=session_id)
    await emitter.emit_unchecked(builder.agent_startup(tools_registered=["restart"]))
    args: dict[str, Any] = {"secret": "s3cr3t"}
    if path == "context_invalid":
        args["ratio"] = float("nan")  # not JSON: the SDK refuses the context
    call = builder.pre_tool_call(call_id="c1", name="restart", args=args)
    if path.startswith("cancelled"):
        task = asyncio.ensure_future(emitter.emit_unchecked(call))
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await emitter.emit_unchecked(builder.agent_shutdown(reason="cancelled"))
    elif path == "host_failure":
        emitter.record_host_failure(
            InterceptionPoint.PRE_TOOL_CALL, "TypeError", session_id=session_id, sequence=1
        )
    elif path == "no_interceptor":
        bare = InterceptionEmitter(composition=emitter.composition)
        bare.register(_Audit(), name="console-base", at=["agent_startup"])
        bare.set_record_sink(lambda record: wires.append(record.to_wire()))
        await bare.emit_unchecked(call)
    else:
        await emitter.emit_unchecked(call)
    if not path.startswith("cancelled"):
        await emitter.emit_unchecked(builder.agent_shutdown(reason="error"))
    return wires


FAILURE_PATHS = (
    "cancelled_awaiting_reviewer",
    "cancelled_in_hook",
    "interceptor_failed",
    "interceptor_timeout",
    "verdict_invalid",
    "resolver_failed",
    "resolver_timeout",
    "context_invalid",
    "host_failure",
    "no_interceptor",
)


def sdk_failure_session(path: str, *, session_id: str | None = None) -> list[dict[str, Any]]:
    """Record wires of one session whose pre_tool_call (sequence 1) fails along `path`:
    agent_startup, the failed pre_tool_call, agent_shutdown."""
    return asyncio.run(_failure(path, session_id or str(uuid.uuid4())))
