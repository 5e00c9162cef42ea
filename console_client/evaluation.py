"""Evaluating one event against the effective hook list: the one implementation shared by
the agent side (the interceptors of `console_client.interceptors`, run by agent_framework's
middleware) and the console's adapters for other agent runtimes (Claude Code, Codex, ...).

Two layers:

- the per-hook rules (`hook_verdict`, `approval_verdict`): is the hook disabled, does the
  matcher match, is a PostToolUse of a failed tool skipped, are prompt Stop hooks past `maxRejections`, and what
  a HookResult means as an AGENT-HOOKS verdict (block → deny, ask → liftable deny, a Stop
  rejection → warn with the reason kept for the continuation, additionalContext kept for
  the next model request, a hook error → warn). A hook in `shadow` mode runs for real, but
  its verdict is only recorded: a warn saying it would have blocked or escalated, never a
  deny, an escalation, a Stop rejection or added context;
- `evaluate_event`: one AGENT-HOOKS context emitted through the SDK's own emitter, built from
  the console's declaration with console_client's registry, so order (agent level first,
  then the custom agent's), composition (`sequential/run_all`), timeouts, evaluate_only and
  the approval seam are the SDK's. It returns what a runtime needs to answer: deny with the
  full reason, an approval (with the reviewer's edited arguments), PostToolUse context, Stop
  rejections, and the payload-free record.

Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent_hooks import (
    ALLOW,
    AgentContextBuilder,
    ApprovalResolution,
    CompositionConfig,
    Decision,
    EnforcementMode,
    HostRegistry,
    InterceptionEmitter,
    InterceptionPoint,
    InterceptionRecord,
    Verdict,
    Warning,
)

from console_client.context_mapping import (
    hook_context,
    matcher_matches,
    tool_result_text,
)
from console_client.results import HookResult
from console_client.session import (
    CURRENT_SESSION,
    DEFAULT_MAX_TURNS,
    MAX_REJECTIONS_DEFAULT,
    SessionState,
    Transcript,
    current_session,
)

REASON_BLOCKED = "console:hook_blocked"
REASON_ASKED = "console:hook_asked"
REASON_APPROVAL = "console:approval_required"
REASON_HOOK_ERROR = "console:hook_error"
REASON_HOOK_TIMEOUT = "console:hook_timeout"
REASON_SHADOW_BLOCK = "console:shadow_would_block"
REASON_SHADOW_ESCALATE = "console:shadow_would_escalate"
REASON_STOP_REJECTED = "console:stop_rejected"
REASON_STOP_BOUND = "console:max_rejections_reached"
REASON_CONTEXT = "console:additional_context"
REASON_NOT_GOVERNED = "console:not_governed"

KIND_PROMPT = "console.prompt"

HookRunner = Callable[..., Awaitable[HookResult]]


def _warn(*, reason: str, message: str) -> Verdict:
    """An allow with one warning, the reason also on the verdict itself: the record's
    per-hook summary then says which hook warned (summaries carry no warnings)."""
    return Verdict(
        decision=Decision.ALLOW,
        reason=reason,
        warnings=(Warning(reason=reason, message=message),),
    )


def hook_mode(hook: dict[str, Any]) -> str:
    """enforce, shadow or disabled: the binding config's `mode` (enforce when absent)."""
    if hook.get("enabled") is False:
        return "disabled"
    return "shadow" if hook.get("mode") == "shadow" else "enforce"


def max_prompt_rejections(document: dict[str, Any]) -> int:
    """How many times prompt Stop hooks may reject: the maximum `maxRejections` over
    enforced prompt Stop hooks (default 3)."""
    values = [
        int(binding["config"].get("maxRejections", MAX_REJECTIONS_DEFAULT))
        for binding in document.get("bindings", [])
        if binding.get("kind") == KIND_PROMPT
        and binding.get("at") == [InterceptionPoint.OUTPUT.value]
        and isinstance(binding.get("config"), dict)
        and hook_mode(binding["config"]) == "enforce"
    ]
    return max(values, default=MAX_REJECTIONS_DEFAULT)


# ---- the per-hook rules ---------------------------------------------------------------


def _tool_call(context: dict[str, Any]) -> dict[str, Any]:
    tool_call = context.get("tool_call")
    return tool_call if isinstance(tool_call, dict) else {}


def hook_applies(hook: dict[str, Any], event: str, context: dict[str, Any]) -> bool:
    """Whether a command/prompt hook runs for this context at all."""
    if event in ("PreToolUse", "PostToolUse"):
        if not matcher_matches(hook.get("matcher"), str(_tool_call(context).get("name", ""))):
            return False
        # PostToolUse fires only when the tool finished successfully.
        result = context.get("tool_result")
        if event == "PostToolUse" and isinstance(result, dict) and result.get("is_error"):
            return False
    return True


async def hook_verdict(
    *,
    key: str,
    hook: dict[str, Any],
    event: str,
    context: dict[str, Any],
    state: SessionState,
    runner: HookRunner,
) -> Verdict:
    """One command or prompt hook on one AGENT-HOOKS context, as a verdict."""
    mode = hook_mode(hook)
    if mode == "disabled" or not hook_applies(hook, event, context):
        return ALLOW
    if (
        event == "Stop"
        and mode == "enforce"
        and hook.get("type") == "prompt"
        and state.stop_rejection_count >= state.max_prompt_rejections
    ):
        return _warn(
            reason=REASON_STOP_BOUND,
            message=f"Prompt Stop hooks stop after {state.max_prompt_rejections} rejections.",
        )
    hook_ctx = hook_context(event, context, state.facts())
    result = await runner(hook, hook_ctx, transcript_path=str(state.transcript.path))
    if mode == "shadow":
        return shadow_verdict(key=key, event=event, result=result)
    return result_verdict(key=key, event=event, result=result, state=state, context=context)


def shadow_verdict(*, key: str, event: str, result: HookResult) -> Verdict:
    """What a shadow hook's result is recorded as; it never touches the session's state."""
    reason = (result.reason or "").strip()
    if event == "Stop":
        blocks = result.decision != "allow" and bool(reason)
    else:
        blocks = result.decision == "block" or (result.decision == "ask" and event != "PreToolUse")
    if blocks:
        return _warn(
            reason=REASON_SHADOW_BLOCK, message=f"Hook {key} (shadow) would have blocked: {reason}"
        )
    if result.decision == "ask":
        return _warn(
            reason=REASON_SHADOW_ESCALATE, message=f"Hook {key} (shadow) would have escalated."
        )
    return _allow(result)


def result_verdict(
    *,
    key: str,
    event: str,
    result: HookResult,
    state: SessionState,
    context: dict[str, Any],
) -> Verdict:
    """What one hook's result means at its event: at Stop a rejection with a reason is a
    warning (the agent continues), without one an approval; elsewhere `block` denies and
    `ask` (PreToolUse only) asks the reviewers."""
    reason = (result.reason or "").strip()
    if event == "Stop":
        if result.decision != "allow" and reason:
            state.stop_rejections.append(reason)
            return _warn(reason=REASON_STOP_REJECTED, message=reason)
        # A rejection without a reason counts as approval.
        return _allow(result)
    if result.decision == "block" or (result.decision == "ask" and event != "PreToolUse"):
        message = reason or f"Blocked by hook {key}."
        state.deny_messages[key] = message
        return Verdict.deny(reason=REASON_BLOCKED, message=message)
    if result.decision == "ask":
        message = reason or f"Hook {key} asks a reviewer to approve this call."
        state.deny_messages[key] = message
        return Verdict(
            decision=Decision.DENY,
            reason=REASON_ASKED,
            message=message,
            approval={"hook": key},
        )
    if event == "PostToolUse" and result.additional_context:
        call_id = str(_tool_call(context).get("id", ""))
        state.pending_context[call_id] = result.additional_context
    return _allow(result)


def _allow(result: HookResult) -> Verdict:
    if result.error:
        reason = REASON_HOOK_TIMEOUT if result.timed_out else REASON_HOOK_ERROR
        return _warn(reason=reason, message=result.error)
    return ALLOW


def approval_verdict(*, key: str, hook: dict[str, Any], context: dict[str, Any]) -> Verdict:
    """A PreToolUse `approval` hook: every matching call waits for reviewers."""
    tool_name = str(_tool_call(context).get("name", ""))
    mode = hook_mode(hook)
    if mode == "disabled" or not matcher_matches(hook.get("matcher"), tool_name):
        return ALLOW
    # The hook's name when the declaration carries it (the key otherwise): people read this.
    label = f"hook \u201c{hook['name']}\u201d" if hook.get("name") else f"hook {key}"
    if mode == "shadow":
        return _warn(
            reason=REASON_SHADOW_ESCALATE,
            message=f"{tool_name} would have needed a reviewer's approval ({label}, shadow).",
        )
    return Verdict(
        decision=Decision.DENY,
        reason=REASON_APPROVAL,
        message=f"{tool_name} needs a reviewer's approval ({label}).",
        approval={
            "hook": key,
            "expires_in": hook.get("expiresIn"),
            "approvals_required": hook.get("approvalsRequired"),
        },
    )


# ---- one event, end to end ---------------------------------------------------------------


@dataclass(frozen=True)
class EventInput:
    """One event of an agent runtime, already mapped onto the console's events.

    `event` is Stop, PostToolUse or PreToolUse; `sequence` is the event's position in the
    runtime's session (the console keeps the counter, so records never collide).
    """

    event: str
    agent_id: str
    agent_name: str
    framework: str
    session_id: str
    sequence: int
    tool_name: str = ""
    tool_call_id: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_result: Any = None
    tool_failed: bool = False
    final_output: str = ""
    stop_rejection_count: int = 0
    turn: int = 0


@dataclass
class EventOutcome:
    """What the hooks decided for one event."""

    record: InterceptionRecord
    enforced: bool
    # PreToolUse / PostToolUse: the call (or its result) must not go on; `message` says why.
    denied: bool = False
    message: str = ""
    # PreToolUse: a reviewer approved; `updated_input` is the complete edited input, if any.
    approved: bool = False
    updated_input: dict[str, Any] | None = None
    # PostToolUse: what the model should read next (the last hook's wins).
    additional_context: str | None = None
    # Stop: the reasons to continue with, in hook order (empty: the agent may stop).
    stop_reasons: list[str] = field(default_factory=list)


POINT_OF_EVENT = {
    "PreToolUse": InterceptionPoint.PRE_TOOL_CALL,
    "PostToolUse": InterceptionPoint.POST_TOOL_CALL,
    "Stop": InterceptionPoint.OUTPUT,
}


def event_context(event: EventInput) -> dict[str, Any]:
    """The AGENT-HOOKS context of one runtime event, built with the SDK's own builder."""
    if event.event not in POINT_OF_EVENT:
        raise ValueError(f"unknown event {event.event!r}; expected {', '.join(POINT_OF_EVENT)}")
    builder = AgentContextBuilder(
        agent_id=event.agent_id,
        framework=event.framework,
        session_id=event.session_id,
        agent_name=event.agent_name,
    )
    context = _point_context(builder, POINT_OF_EVENT[event.event].value, event)
    context["sequence"] = event.sequence
    return context


def _write_transcript(transcript: Transcript, event: EventInput) -> None:
    """What the console knows of the conversation, for hooks that read execution_summary."""
    if event.event == "Stop":
        transcript.append("assistant", event.final_output)
        return
    transcript.append(
        "assistant",
        json.dumps({"tool_call": event.tool_name, "args": event.tool_input}, default=str),
        tool_name=event.tool_name,
        call_id=event.tool_call_id,
    )
    if event.event == "PostToolUse":
        transcript.append(
            "tool",
            tool_result_text(event.tool_result),
            tool_name=event.tool_name,
            call_id=event.tool_call_id,
            succeeded=not event.tool_failed,
        )


def _deny_message(record: InterceptionRecord, state: SessionState, resolved: str | None) -> str:
    if resolved:
        return resolved
    decided = record.decided_by
    for summary in record.verdicts:
        if decided is not None and summary.index == decided and summary.name:
            message = state.deny_messages.get(summary.name)
            if message:
                return message
    verdict = record.verdict
    if verdict.reason and verdict.reason.startswith("host_error:"):
        return (
            f"The console could not evaluate this call ({verdict.reason}); "
            "it is blocked until it can."
        )
    return verdict.message or verdict.reason or "Blocked by the console's hooks."


class _NotGoverned:
    """The one interceptor of an event the console records but cannot govern."""

    def intercept(self, context: dict[str, Any]) -> Verdict:
        return Verdict.warn(
            reason=REASON_NOT_GOVERNED,
            message="The console records this event of the runtime but cannot govern it.",
        )


def _point_context(builder: AgentContextBuilder, point: str, event: EventInput) -> dict[str, Any]:
    if point == "pre_tool_call":
        return builder.pre_tool_call(
            call_id=event.tool_call_id, name=event.tool_name, args=dict(event.tool_input)
        )
    if point == "post_tool_call":
        return builder.post_tool_call(
            call_id=event.tool_call_id,
            name=event.tool_name,
            args=dict(event.tool_input),
            value=event.tool_result,
            is_error=event.tool_failed,
        )
    if point == "output":
        return builder.output(content=event.final_output)
    if point == "input":
        return builder.input(content="")
    if point == "agent_startup":
        return builder.agent_startup(tools_registered=[])
    if point == "agent_shutdown":
        return builder.agent_shutdown(reason="completed")
    if point == "pre_model_call":
        return builder.pre_model_call(model_id="runtime", messages=[])
    if point == "post_model_call":
        return builder.post_model_call(
            model_id="runtime", content="", tool_calls=[], finish_reason="stop"
        )
    raise ValueError(f"unknown interception point {point!r}")


async def record_ungoverned(*, event: EventInput, point: str, mode: str) -> InterceptionRecord:
    """The record of a runtime event the console cannot govern: an allow with a
    `console:not_governed` warning at the event's point, through the SDK's emitter."""
    emitter = InterceptionEmitter(
        mode=EnforcementMode(mode), composition=CompositionConfig.run_all()
    )
    emitter.register(_NotGoverned(), name="console-not-governed")
    builder = AgentContextBuilder(
        agent_id=event.agent_id,
        framework=event.framework,
        session_id=event.session_id,
        agent_name=event.agent_name,
    )
    context = _point_context(builder, point, event)
    context["sequence"] = event.sequence
    return await emitter.emit_unchecked(context)


async def evaluate_event(
    *,
    document: dict[str, Any],
    registry: HostRegistry,
    event: EventInput,
    transcript: Transcript,
    resolutions: Callable[[], ApprovalResolution | None] | None = None,
    record_sink: Callable[[InterceptionRecord], None] | None = None,
) -> EventOutcome:
    """Evaluate one runtime event against the declaration `document` (the console's
    effective hooks). `registry` comes from `console_client.interceptors.build_registry`;
    `resolutions` returns the resolution the registry's resolver produced, if any, so a
    reviewer's full reason reaches the model (records keep 256 bytes of it). `record_sink`
    gets every record the emission produces, the fail-closed one of a cancelled
    emission included (which then re-raises CancelledError)."""
    emitter = InterceptionEmitter.from_declaration_value(document, registry)
    if record_sink is not None:
        emitter.set_record_sink(record_sink)
    state = SessionState(
        session_id=event.session_id,
        agent_name=event.agent_name,
        transcript=transcript,
        max_prompt_rejections=max_prompt_rejections(document),
        turn=event.turn,
        stop_rejection_count=event.stop_rejection_count,
    )
    _write_transcript(transcript, event)
    context = event_context(event)
    token = CURRENT_SESSION.set(state)
    try:
        record = await emitter.emit_unchecked(context)
    finally:
        CURRENT_SESSION.reset(token)
    enforced = record.mode is EnforcementMode.ENFORCE
    outcome = EventOutcome(record=record, enforced=enforced)
    if event.event == "Stop":
        outcome.stop_reasons = list(state.stop_rejections)
        return outcome
    if not record.verdict.decision.permits:
        resolution = resolutions() if resolutions is not None else None
        resolved = None
        if record.resolved_by == "rejection" and resolution is not None and resolution.verdict:
            resolved = resolution.verdict.message
        outcome.denied = True
        outcome.message = _deny_message(record, state, resolved)
        return outcome
    outcome.approved = record.resolved_by == "approval"
    if record.verdict.decision is Decision.TRANSFORM and isinstance(context.get("target"), dict):
        outcome.updated_input = dict(context["target"])
    if event.event == "PostToolUse":
        outcome.additional_context = state.pending_context.get(event.tool_call_id)
    return outcome


__all__ = [
    "CURRENT_SESSION",
    "DEFAULT_MAX_TURNS",
    "MAX_REJECTIONS_DEFAULT",
    "REASON_APPROVAL",
    "REASON_ASKED",
    "REASON_BLOCKED",
    "REASON_CONTEXT",
    "REASON_HOOK_ERROR",
    "REASON_HOOK_TIMEOUT",
    "REASON_SHADOW_BLOCK",
    "REASON_SHADOW_ESCALATE",
    "REASON_NOT_GOVERNED",
    "REASON_STOP_BOUND",
    "REASON_STOP_REJECTED",
    "EventInput",
    "EventOutcome",
    "HookRunner",
    "SessionState",
    "Transcript",
    "approval_verdict",
    "current_session",
    "evaluate_event",
    "event_context",
    "hook_applies",
    "hook_mode",
    "hook_verdict",
    "max_prompt_rejections",
    "record_ungoverned",
    "result_verdict",
    "shadow_verdict",
]
