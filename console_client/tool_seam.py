"""The tool-seam posture `continue` (AGENT-HOOKS §13.1, §6.2): a host error at a tool call
refuses that call and the run goes on.

A `host_error:*` deny at `pre_tool_call` or `post_tool_call` is what the SDK makes of an
interceptor that raised or timed out, a malformed verdict, a resolver that failed (the
console unreachable while a tool call waits for reviewers), a transform that cannot be
applied. The SDK has recorded it as a deny and raised `InterceptionBlocked`.

agent_framework's bundle (`create_agent_hooks_middleware_from_emitter`) enforces it as it
enforces a policy deny at a tool (the tool is not run, or its result is discarded, and the
call's result is a control error naming the reason, without the blocked payload) and then
halts the whole run: it raises its own `MiddlewareFailure` (the function loop's
fail-closed escape) with the `InterceptionBlocked` as the cause. That is posture
`terminate`.

console_client implements `continue`, the SDK's default posture, which the console
declares: `ToolSeamPosture` wraps the bundle's function middleware and, for exactly that
halt, leaves the control error as the call's result and returns, so the model reads that
the call was refused and why, and the loop goes on. What stays as it was:

- The tool never runs after a host error at `pre_tool_call`, and a result the
  `post_tool_call` verdict did not let through never reaches the model: the result is
  always replaced by the control error. Every later tool call is judged afresh.
- The record is the SDK's (`deny`, `host_error:*`), stored like every other.
- Only the bundle's own halt is turned into `continue`: the `InterceptionBlocked` must be
  the very exception the session's emitter raised for a host error at a tool point
  (`HostErrorBlocks`, by identity). Every other `MiddlewareFailure` (a failure of the
  enforcement layer itself, a projection fault, another middleware's halt, one with a
  crafted cause) still stops the run. Host errors at the run and model points
  (`input`, `pre_model_call`, `post_model_call`, `output`) end the run as before: the
  posture is about the tool seam only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent_framework import (
    FunctionInvocationContext,
    FunctionMiddleware,
    MiddlewareBundle,
    MiddlewareFailure,
)
from agent_hooks import InterceptionBlocked, InterceptionEmitter, InterceptionPoint

from console_client.interceptors import TOOL_SEAM_HOST_ERROR

CONTINUE = "continue"
TERMINATE = "terminate"
TOOL_POINTS = frozenset({InterceptionPoint.PRE_TOOL_CALL, InterceptionPoint.POST_TOOL_CALL})
HOST_ERROR_PREFIX = "host_error:"


def session_posture(emitter: InterceptionEmitter) -> str:
    """The posture the session's emitter was built under (its resolved declaration; the
    loader refuses a document whose posture differs from console_client's HostSurface)."""
    declaration = emitter.declaration
    if declaration is None:
        return TOOL_SEAM_HOST_ERROR
    return str(declaration.configuration["posture"]["tool_seam_host_error"])


def is_tool_seam_host_error(blocked: InterceptionBlocked) -> bool:
    record = blocked.result
    reason = record.verdict.reason or ""
    return record.interception_point in TOOL_POINTS and reason.startswith(HOST_ERROR_PREFIX)


def control_error(blocked: InterceptionBlocked) -> dict[str, Any]:
    """The refused call's result, as the model reads it: the shape agent_framework gives a
    policy deny at a tool (the point and the reason, never the blocked payload)."""
    record = blocked.result
    payload: dict[str, Any] = {
        "error": f"Tool call blocked by agent-hooks at {record.interception_point.value}.",
        "reason": record.verdict.reason or "deny",
    }
    if record.verdict.message:
        payload["message"] = record.verdict.message
    return payload


@dataclass
class HostErrorBlocks:
    """The tool-seam host-error blocks one session's emitter raised and the bundle has not
    yet turned into a halt: the proof that a halt is the bundle's own."""

    posture: str
    _pending: list[InterceptionBlocked] = field(default_factory=list)

    def note(self, blocked: InterceptionBlocked) -> None:
        if is_tool_seam_host_error(blocked):
            self._pending.append(blocked)

    def take(self, blocked: object) -> InterceptionBlocked | None:
        """The pending block `blocked` is (by identity), removed; None when it is not one."""
        for index, pending in enumerate(self._pending):
            if pending is blocked:
                return self._pending.pop(index)
        return None


class ToolSeamPosture(FunctionMiddleware):
    """agent_framework's agent-hooks function middleware, with posture `continue` at the
    tool seam (see the module docstring)."""

    def __init__(
        self, inner: FunctionMiddleware, blocks: Callable[[], HostErrorBlocks | None]
    ) -> None:
        self._inner = inner
        self._blocks = blocks

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        try:
            await self._inner.process(context, call_next)
        except MiddlewareFailure as failure:
            blocks = self._blocks()
            blocked = blocks.take(failure.__cause__) if blocks is not None else None
            if blocked is None or blocks is None or blocks.posture != CONTINUE:
                raise
            # The tool did not run (pre_tool_call) or its result is not let through
            # (post_tool_call): whatever the call left in `result`, the model reads the
            # control error, and the function loop goes on.
            context.result = control_error(blocked)


def with_tool_seam_posture(
    bundle: MiddlewareBundle, blocks: Callable[[], HostErrorBlocks | None]
) -> MiddlewareBundle:
    """`bundle` (agent_framework's agent-hooks bundle) as one bundle again, its function
    middleware wrapped in `ToolSeamPosture`. The agent and chat middleware are the
    bundle's own, unchanged."""
    # The framework's own expansion of a bundle into its members, by category.
    from agent_framework._middleware import categorize_middleware

    members = categorize_middleware(bundle)
    functions = members["function"]
    if len(functions) != 1 or not isinstance(functions[0], FunctionMiddleware):
        raise RuntimeError(
            "agent_framework's agent-hooks bundle no longer has one function middleware; "
            "console_client cannot apply its tool-seam posture"
        )
    return MiddlewareBundle(
        [*members["agent"], *members["chat"], ToolSeamPosture(functions[0], blocks)]
    )
