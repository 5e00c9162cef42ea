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

What a hook decides (matcher, Stop bounds, result → verdict) is
`console_client.evaluation`, the implementation the console's runtime adapters share.

Verdict reasons are machine codes (`console:*`); the hook's own words travel in `message`,
which reaches the model but never a record (records.py strips messages).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

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

from console_client.context_mapping import EVENT_BY_POINT, TOOL_EVENTS, final_text, tool_result_text
from console_client.evaluation import (
    CURRENT_SESSION,
    DEFAULT_MAX_TURNS,
    MAX_REJECTIONS_DEFAULT,
    REASON_APPROVAL,
    REASON_ASKED,
    REASON_BLOCKED,
    REASON_CONTEXT,
    REASON_HOOK_ERROR,
    REASON_STOP_BOUND,
    REASON_STOP_REJECTED,
    HookRunner,
    SessionState,
    Transcript,
    approval_verdict,
    current_session,
    hook_mode,
    hook_verdict,
    max_prompt_rejections,
)
from console_client.patterns import matcher_error

KIND_BASE = "console.base"
KIND_COMMAND = "console.command"
KIND_PROMPT = "console.prompt"
KIND_APPROVAL = "console.approval"
RESOLVER_NAME = "console"

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

__all__ = [
    "CURRENT_SESSION",
    "DEFAULT_MAX_TURNS",
    "MAX_REJECTIONS_DEFAULT",
    "REASON_APPROVAL",
    "REASON_ASKED",
    "REASON_BLOCKED",
    "REASON_CONTEXT",
    "REASON_HOOK_ERROR",
    "REASON_STOP_BOUND",
    "REASON_STOP_REJECTED",
    "ApprovalInterceptor",
    "BaseInterceptor",
    "HookInterceptor",
    "HookRunner",
    "SessionState",
    "Transcript",
    "build_registry",
    "current_session",
    "max_prompt_rejections",
    "with_injected_context",
]


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
        return await hook_verdict(
            key=self.key,
            hook=self.hook,
            event=self.event,
            context=context,
            state=current_session(),
            runner=self.runner,
        )


@dataclass
class ApprovalInterceptor:
    """A PreToolUse `approval` hook: every matching call waits for reviewers."""

    key: str
    hook: dict[str, Any]

    def intercept(self, context: dict[str, Any]) -> Verdict:
        return approval_verdict(key=self.key, hook=self.hook, context=context)


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


def stop_hook_bindings(document: dict[str, Any]) -> tuple[int, int]:
    """(command, prompt) enforced hook bindings at `output` (Stop) in a declaration: the
    hooks that can make the agent continue (a shadow hook never does)."""
    kinds = [
        binding.get("kind")
        for binding in document.get("bindings", [])
        if binding.get("at") == [InterceptionPoint.OUTPUT.value]
        and hook_mode(binding.get("config") or {}) == "enforce"
    ]
    return kinds.count(KIND_COMMAND), kinds.count(KIND_PROMPT)


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
