"""The console binding kinds and the per-session state they share.

Kinds registered in a `HostRegistry` (the console's declaration names them):

- `console.base`: bound at every point, always permits. It keeps the session's
  bookkeeping (turn count, transcript, tool names for record meta) and, at
  `pre_model_call`, writes PostToolUse `additionalContext` into the request as user
  messages (a `$target` transform, so the injection is on the record and evaluate_only
  leaves the request untouched).
- `console.command` / `console.prompt`: one configured hook; runs it through the runners
  of `console_client.runners` and maps its HookResult to a verdict.
- `console.approval`: a PreToolUse approval hook; escalates when its matcher matches.

Verdict reasons are machine codes (`console:*`); the hook's own words travel in `message`,
which reaches the model but never a record (records.py strips messages).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from agent_hooks import (
    ALLOW,
    BindingContext,
    Decision,
    HostRegistry,
    HostSurface,
    InterceptionPoint,
    Interceptor,
    Transform,
    Verdict,
)
from agent_hooks.approval import ApprovalResolver

from console_client.context_mapping import (
    EVENT_BY_POINT,
    TOOL_EVENTS,
    TurnFacts,
    final_text,
    hook_context,
    matcher_matches,
    tool_result_text,
)
from console_client.patterns import matcher_error
from console_client.results import HookResult

KIND_BASE = "console.base"
KIND_COMMAND = "console.command"
KIND_PROMPT = "console.prompt"
KIND_APPROVAL = "console.approval"
RESOLVER_NAME = "console"

REASON_BLOCKED = "console:hook_blocked"
REASON_ASKED = "console:hook_asked"
REASON_APPROVAL = "console:approval_required"
REASON_HOOK_ERROR = "console:hook_error"
REASON_STOP_REJECTED = "console:stop_rejected"
REASON_STOP_BOUND = "console:max_rejections_reached"
REASON_CONTEXT = "console:additional_context"

MAX_REJECTIONS_DEFAULT = 3
DEFAULT_MAX_TURNS = 40

# AGENT-HOOKS §13.1 posture at the tool seam: after a `host_error:*` deny at pre_tool_call
# or post_tool_call the tool has not run (or its result is dropped), the model reads a
# control error naming the reason, and the run goes on. agent_framework's bundle would halt
# the run there; console_client's bundle wraps its tool seam to continue (tool_seam.py).
# The console's declaration states the same value (agents/declaration.py).
TOOL_SEAM_HOST_ERROR = "continue"

# What this host's code can honour. Python holds integers beyond 2^53 and beyond u64 from
# JSON losslessly (int64_json, bigint_json), so the SDK sees them and refuses them fail-closed
# at the first emission instead of a parser rounding them. Output is buffered (no
# incremental_output); runs are not streamed through the hooks.
HOST_SURFACE = HostSurface.from_capabilities(
    ["bigint_json", "host_declaration", "int64_json", "model_calls", "multi_turn", "tool_calls"],
    tool_seam_host_error=TOOL_SEAM_HOST_ERROR,
)

HookRunner = Callable[..., Awaitable[HookResult]]


class Transcript(Protocol):
    """Where the session's conversation is written for hooks to read (execution_summary)."""

    @property
    def path(self) -> Path: ...

    def append(self, role: str, content: str, **extra: Any) -> None: ...


@dataclass
class SessionState:
    """Everything one hooks session (one `ConsoleHooks.run`) accumulates."""

    session_id: str
    agent_name: str
    transcript: Transcript
    # The most model calls the whole session can make (client.session_max_turns).
    max_turns: int = DEFAULT_MAX_TURNS
    max_prompt_rejections: int = MAX_REJECTIONS_DEFAULT
    # Model calls so far in the session: the Stop continuations (each a new `agent.run`,
    # each emitting `input` again) go on counting; a new `ConsoleHooks.run` starts at 0.
    turn: int = 0
    stop_rejection_count: int = 0
    # Reasons given by Stop hooks at the latest `output` emission, in hook order.
    stop_rejections: list[str] = field(default_factory=list)
    # PostToolUse additionalContext per tool call id (the last hook's wins) ...
    pending_context: dict[str, str] = field(default_factory=dict)
    # ... and once injected, kept so every later request carries it at the same place.
    injected_context: list[tuple[str, str]] = field(default_factory=list)
    tool_names: dict[int, str] = field(default_factory=dict)
    tool_schemas: dict[str, Any] = field(default_factory=dict)

    def facts(self) -> TurnFacts:
        return TurnFacts(
            agent_name=self.agent_name,
            current_turn=self.turn,
            max_turns=self.max_turns,
            transcript_path=str(self.transcript.path),
            stop_rejection_count=self.stop_rejection_count,
        )


CURRENT_SESSION: ContextVar[SessionState | None] = ContextVar(
    "console_client_session", default=None
)


def current_session() -> SessionState:
    state = CURRENT_SESSION.get()
    if state is None:
        raise RuntimeError(
            "No console hooks session is active: run the agent with `await hooks.run(agent, ...)`."
        )
    return state


def max_prompt_rejections(document: dict[str, Any]) -> int:
    """SPEC §1: the maximum `maxRejections` over prompt Stop hooks (default 3)."""
    values = [
        int(binding["config"].get("maxRejections", MAX_REJECTIONS_DEFAULT))
        for binding in document.get("bindings", [])
        if binding.get("kind") == KIND_PROMPT
        and binding.get("at") == [InterceptionPoint.OUTPUT.value]
        and isinstance(binding.get("config"), dict)
    ]
    return max(values, default=MAX_REJECTIONS_DEFAULT)


def stop_hook_bindings(document: dict[str, Any]) -> tuple[int, int]:
    """(command, prompt) hook bindings at `output` (Stop) in a declaration."""
    kinds = [
        binding.get("kind")
        for binding in document.get("bindings", [])
        if binding.get("at") == [InterceptionPoint.OUTPUT.value]
    ]
    return kinds.count(KIND_COMMAND), kinds.count(KIND_PROMPT)


def _tool_message_index(messages: list[Any], call_id: str) -> int | None:
    """Index of the last message of the tool-result block that holds `call_id`'s result."""
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        if any(
            isinstance(item, dict)
            and item.get("type") == "function_result"
            and str(item.get("call_id")) == call_id
            for item in content
        ):
            end = index
            while end + 1 < len(messages) and messages[end + 1].get("role") == "tool":
                end += 1
            return end
    return None


def with_injected_context(messages: list[Any], injected: list[tuple[str, str]]) -> list[Any]:
    """`messages` with each (call id, text) as a user message after that call's results."""
    out = list(messages)
    for call_id, text in reversed(injected):
        index = _tool_message_index(out, call_id)
        if index is not None:
            out.insert(index + 1, {"role": "user", "content": text})
    return out


class BaseInterceptor:
    """`console.base`: always permits; session bookkeeping and context injection."""

    def intercept(self, context: dict[str, Any]) -> Verdict:
        state = CURRENT_SESSION.get()
        if state is None:
            return ALLOW
        point = context.get("interception_point")
        tool_call = context.get("tool_call")
        if isinstance(tool_call, dict) and isinstance(context.get("sequence"), int):
            state.tool_names[context["sequence"]] = str(tool_call.get("name", ""))
        if point == "input":
            state.transcript.append("user", final_text(context["input"].get("content")))
        elif point == "post_model_call":
            return self._post_model_call(state, context)
        elif point == "post_tool_call" and isinstance(tool_call, dict):
            result = context.get("tool_result") or {}
            state.transcript.append(
                "tool",
                tool_result_text(result.get("value")),
                tool_name=tool_call.get("name"),
                call_id=tool_call.get("id"),
                succeeded=not result.get("is_error", False),
            )
        elif point == "pre_model_call":
            state.turn += 1
            return self._inject(state, context)
        return ALLOW

    @staticmethod
    def _post_model_call(state: SessionState, context: dict[str, Any]) -> Verdict:
        response = context.get("response") or {}
        text = final_text(response.get("content"))
        if text:
            state.transcript.append("assistant", text)
        for call in response.get("tool_calls") or []:
            state.transcript.append(
                "assistant",
                json.dumps({"tool_call": call.get("name"), "args": call.get("args")}),
                tool_name=call.get("name"),
                call_id=call.get("id"),
            )
        return ALLOW

    @staticmethod
    def _inject(state: SessionState, context: dict[str, Any]) -> Verdict:
        for call_id, text in state.pending_context.items():
            state.injected_context.append((call_id, text))
            state.transcript.append("user", text, additional_context_for=call_id)
        state.pending_context.clear()
        messages = context.get("target")
        if not state.injected_context or not isinstance(messages, list):
            return ALLOW
        updated = with_injected_context(messages, state.injected_context)
        if len(updated) == len(messages):
            return ALLOW
        return Verdict(
            decision=Decision.TRANSFORM,
            reason=REASON_CONTEXT,
            transform=Transform("$target", updated),
        )


@dataclass
class HookInterceptor:
    """One configured command or prompt hook at its event's point."""

    key: str
    hook: dict[str, Any]
    event: str
    runner: HookRunner

    async def intercept(self, context: dict[str, Any]) -> Verdict:
        state = current_session()
        if self.event in TOOL_EVENTS:
            tool_name = str((context.get("tool_call") or {}).get("name", ""))
            if not matcher_matches(self.hook.get("matcher"), tool_name):
                return ALLOW
            # SPEC §1: PostToolUse fires when a tool finished successfully.
            if self.event == "PostToolUse" and (context.get("tool_result") or {}).get("is_error"):
                return ALLOW
        if (
            self.event == "Stop"
            and self.hook.get("type") == "prompt"
            and state.stop_rejection_count >= state.max_prompt_rejections
        ):
            return Verdict.warn(
                reason=REASON_STOP_BOUND,
                message=f"Prompt Stop hooks stop after {state.max_prompt_rejections} rejections.",
            )
        hook_ctx = hook_context(self.event, context, state.facts())
        result = await self.runner(self.hook, hook_ctx, transcript_path=str(state.transcript.path))
        return self._verdict(result, state, context)

    def _verdict(self, result: HookResult, state: SessionState, context: dict[str, Any]) -> Verdict:
        reason = (result.reason or "").strip()
        if self.event == "Stop":
            if result.decision != "allow" and reason:
                state.stop_rejections.append(reason)
                return Verdict.warn(reason=REASON_STOP_REJECTED, message=reason)
            # A rejection without a reason counts as approval (SPEC §1).
            return self._allow(result)
        if result.decision == "block":
            return Verdict.deny(
                reason=REASON_BLOCKED, message=reason or f"Blocked by hook {self.key}."
            )
        if result.decision == "ask":
            if self.event != "PreToolUse":
                return Verdict.deny(
                    reason=REASON_BLOCKED, message=reason or f"Blocked by hook {self.key}."
                )
            return Verdict(
                decision=Decision.DENY,
                reason=REASON_ASKED,
                message=reason or f"Hook {self.key} asks a reviewer to approve this call.",
                approval={"hook": self.key},
            )
        if self.event == "PostToolUse" and result.additional_context:
            call_id = str((context.get("tool_call") or {}).get("id", ""))
            state.pending_context[call_id] = result.additional_context
        return self._allow(result)

    @staticmethod
    def _allow(result: HookResult) -> Verdict:
        if result.error:
            return Verdict.warn(reason=REASON_HOOK_ERROR, message=result.error)
        return ALLOW


@dataclass
class ApprovalInterceptor:
    """A PreToolUse `approval` hook: every matching call waits for reviewers."""

    key: str
    hook: dict[str, Any]

    def intercept(self, context: dict[str, Any]) -> Verdict:
        tool_name = str((context.get("tool_call") or {}).get("name", ""))
        if not matcher_matches(self.hook.get("matcher"), tool_name):
            return ALLOW
        return Verdict(
            decision=Decision.DENY,
            reason=REASON_APPROVAL,
            message=f"{tool_name} needs a reviewer's approval (hook {self.key}).",
            approval={
                "hook": self.key,
                "expires_in": self.hook.get("expiresIn"),
                "approvals_required": self.hook.get("approvalsRequired"),
            },
        )


def _event_of(binding: BindingContext) -> str:
    points = {point.value for point in binding.at}
    events = {EVENT_BY_POINT[point] for point in points if point in EVENT_BY_POINT}
    if len(events) != 1 or len(points) != 1:
        raise ValueError("a console hook binding must be bound at exactly one hook point")
    return events.pop()


def _require_mapping(config: Any) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise ValueError("config must be the hook definition object")
    return config


def _require_usable_matcher(hook: dict[str, Any], event: str) -> None:
    """A tool hook whose matcher the linear-time engine cannot compile would silently match
    nothing (a hook switched off unseen): the binding, and so the declaration, is refused.
    The console refuses such matchers when they are saved."""
    matcher = hook.get("matcher")
    if event in TOOL_EVENTS and isinstance(matcher, str) and matcher:
        problem = matcher_error(matcher)
        if problem is not None:
            raise ValueError(f"matcher {matcher[:80]!r} does not compile as RE2: {problem}")


def build_registry(
    *,
    command_runner: HookRunner,
    prompt_runner: HookRunner,
    resolver: object,
) -> HostRegistry:
    """The registry the console's declaration is loaded against."""

    def base(config: Any, binding: BindingContext) -> Interceptor:
        return BaseInterceptor()

    def command(config: Any, binding: BindingContext) -> Interceptor:
        hook = _require_mapping(config)
        if hook.get("type") != "command" or not (hook.get("command") or hook.get("script")):
            raise ValueError(
                "a console.command binding needs a command hook with command or script"
            )
        event = _event_of(binding)
        _require_usable_matcher(hook, event)
        return cast(Interceptor, HookInterceptor(binding.id, hook, event, command_runner))

    def prompt(config: Any, binding: BindingContext) -> Interceptor:
        hook = _require_mapping(config)
        if hook.get("type", "prompt") != "prompt" or not hook.get("prompt"):
            raise ValueError("a console.prompt binding needs a prompt hook with a prompt")
        event = _event_of(binding)
        _require_usable_matcher(hook, event)
        return cast(Interceptor, HookInterceptor(binding.id, hook, event, prompt_runner))

    def approval(config: Any, binding: BindingContext) -> Interceptor:
        hook = _require_mapping(config)
        if _event_of(binding) != "PreToolUse":
            raise ValueError("a console.approval binding is only valid at pre_tool_call")
        _require_usable_matcher(hook, "PreToolUse")
        return ApprovalInterceptor(binding.id, hook)

    registry = HostRegistry(HOST_SURFACE)
    registry.kind(KIND_BASE, base)
    registry.kind(KIND_COMMAND, command)
    registry.kind(KIND_PROMPT, prompt)
    registry.kind(KIND_APPROVAL, approval)
    # The SDK awaits an awaitable `resolve`; the protocol is spelled synchronously.
    registry.approval_resolver(RESOLVER_NAME, cast(ApprovalResolver, resolver))
    return registry
