"""Which approval rule governs an escalation: the console decides, from its own configuration.

An agent's request says which tool it wants to call and may name the hook that escalated;
it never chooses how many approvals it needs or how long reviewers have. The rule:

1. The call is a `pre_tool_call` (the only point where the console's hooks ask for approval);
   its tool is `request.context.tool_call.name` (or `meta.tool_name` when the request carries
   no context; when both are given they must agree).
2. The effective configuration is the agent-level hooks, then those of the custom agent
   named by `meta.custom_agent` (which must exist). Only enabled, enforced (not shadow)
   PreToolUse hooks count, and
   a hook applies when its matcher matches the tool, by console_client's own matcher.
3. A named hook (`meta.hook` or `request.verdict.approval.hook`; both given must agree) must
   be one of those hooks: of this agent, of the agent level or of that custom agent, enabled,
   PreToolUse, and matching the tool. Anything else is refused (400 naming the field).
4. When approval hooks match, the strictest of them governs: `approvalsRequired` is the
   maximum over them and the expiry the minimum `expiresIn` over them (the two may come from
   different hooks). This holds whichever hook escalated: a command or prompt hook that
   answered `ask` for the same call does not lower it.
5. When no approval hook matches, only a command or prompt PreToolUse hook that answered
   `ask` can escalate, and it must be named: the console default applies (1 approval,
   CONSOLE_DEFAULT_ESCALATION_SECONDS). With no hook named, the request is refused.

The escalation records the named hook (the one that escalated) or, when none is named, the
first approval hook (enforcement order) that requires the most approvals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents.hook_matching import approval_hooks_matching, hook_matches_tool
from agents.models import Agent, CustomAgent, Event, Hook, HookMode
from agents.selectors import find_custom_agent
from agents.validation import EXPIRES_MAX
from approvals.validation import META_TEXT_LIMITS
from console.errors import InvalidInput, pointer

ESCALATING_POINT = "pre_tool_call"
HOOK_KEY_MAX_CHARS = META_TEXT_LIMITS["hook"]
TOOL_NAME_MAX_CHARS = META_TEXT_LIMITS["tool_name"]


@dataclass(frozen=True)
class ApprovalRule:
    approvals_required: int
    expires_in: int  # seconds
    hook: Hook  # the hook the escalation records (see the module docstring)
    # The approval hooks that set the rule, in enforcement order; empty: the console default.
    rule_hooks: tuple[Hook, ...]


@dataclass(frozen=True)
class NamedHook:
    key: str
    at: str  # the JSON pointer that named it, for errors


def _scope_label(custom_agent: CustomAgent | None) -> str:
    return f"custom agent {custom_agent.name!r}" if custom_agent else "the agent level"


def _checked_named_hook(
    agent: Agent, custom_agent: CustomAgent | None, tool_name: str, named: NamedHook
) -> Hook:
    hook = Hook.objects.select_related("custom_agent").filter(agent=agent, key=named.key).first()
    problem = None
    if hook is None:
        problem = f"No hook {named.key!r} on agent {agent.slug}."
    elif hook.custom_agent_id is not None and hook.custom_agent_id != getattr(
        custom_agent, "pk", None
    ):
        assert hook.custom_agent is not None
        problem = (
            f"Hook {named.key!r} belongs to custom agent {hook.custom_agent.name!r}; this "
            f"escalation runs as {_scope_label(custom_agent)} (meta.custom_agent)."
        )
    elif not hook.enabled:
        problem = f"Hook {named.key!r} is disabled."
    elif hook.mode == HookMode.SHADOW:
        problem = f"Hook {named.key!r} is in shadow mode: it records, never escalates."
    elif hook.event != Event.PRE_TOOL_USE:
        problem = f"Hook {named.key!r} is a {hook.event} hook; only PreToolUse hooks escalate."
    elif not hook_matches_tool(hook, tool_name):
        problem = (
            f"Hook {named.key!r} (matcher {hook.definition.get('matcher')!r}) does not match "
            f"tool {tool_name!r}."
        )
    if problem is not None:
        raise InvalidInput(
            "The escalating hook does not apply to this call.", fields={named.at: [problem]}
        )
    assert hook is not None
    return hook


def _default_expiry() -> int:
    return int(settings.CONSOLE_DEFAULT_ESCALATION_SECONDS)


def _clamped(expires_in: int) -> int:
    return max(1, min(int(expires_in), EXPIRES_MAX))


def approval_rule(
    *,
    agent: Agent,
    custom_agent: CustomAgent | None,
    tool_name: str,
    named: NamedHook | None,
    tool_at: str = pointer("request", "context", "tool_call", "name"),
) -> ApprovalRule:
    """The rule for a call of `tool_name` (module docstring); InvalidInput when nothing the
    configuration holds may escalate it, or the named hook does not apply to it."""
    hook = _checked_named_hook(agent, custom_agent, tool_name, named) if named else None
    matching = approval_hooks_matching(agent, custom_agent, tool_name)
    if matching:
        required = max(int(h.definition.get("approvalsRequired") or 1) for h in matching)
        expires = min(int(h.definition.get("expiresIn") or _default_expiry()) for h in matching)
        if hook is None:
            hook = next(
                h for h in matching if int(h.definition.get("approvalsRequired") or 1) == required
            )
        return ApprovalRule(max(1, required), _clamped(expires), hook, tuple(matching))
    if hook is None:
        raise InvalidInput(
            "No approval hook applies to this call.",
            fields={
                tool_at: [
                    f"No approval hook of {agent.slug} ({_scope_label(custom_agent)}) matches "
                    f"tool {tool_name!r}, and no hook that asked is named (meta.hook)."
                ]
            },
        )
    # Not an approval hook (it would have matched above): a command or prompt hook's `ask`.
    return ApprovalRule(1, _clamped(_default_expiry()), hook, ())


def _named_hook(request: dict[str, Any], meta: dict[str, Any]) -> NamedHook | None:
    approval = request["verdict"].get("approval")
    verdict_key = approval.get("hook") if isinstance(approval, dict) else None
    verdict_at = pointer("request", "verdict", "approval", "hook")
    if verdict_key is not None and (
        not isinstance(verdict_key, str) or len(verdict_key) > HOOK_KEY_MAX_CHARS
    ):
        raise InvalidInput(
            "The escalating hook is invalid.", fields={verdict_at: ["Must be a hook key."]}
        )
    meta_key = meta.get("hook")
    if meta_key is not None and verdict_key is not None and meta_key != verdict_key:
        raise InvalidInput(
            "The escalating hook is named twice, differently.",
            fields={
                pointer("meta", "hook"): [
                    f"Differs from request.verdict.approval.hook ({verdict_key!r})."
                ]
            },
        )
    if meta_key is not None:
        return NamedHook(str(meta_key), pointer("meta", "hook"))
    if verdict_key is not None:
        return NamedHook(verdict_key, verdict_at)
    return None


def _tool_name(request: dict[str, Any], meta: dict[str, Any]) -> tuple[str, str]:
    """(tool name, the pointer to blame for it): the context's tool call when the request
    carries a context, else meta.tool_name."""
    context = request.get("context")
    claimed = meta.get("tool_name")
    if isinstance(context, dict):
        tool_call = context.get("tool_call")
        called = tool_call.get("name") if isinstance(tool_call, dict) else None
        at = pointer("request", "context", "tool_call", "name")
        if not isinstance(called, str) or not called or len(called) > TOOL_NAME_MAX_CHARS:
            raise InvalidInput(
                "The escalation names no tool.",
                fields={at: [f"The tool's name: 1-{TOOL_NAME_MAX_CHARS} characters."]},
            )
        if claimed is not None and claimed != called:
            raise InvalidInput(
                "The tool name differs from the tool call's.",
                fields={pointer("meta", "tool_name"): [f"The request's tool call is {called!r}."]},
            )
        return called, at
    if isinstance(claimed, str) and claimed:
        return claimed, pointer("meta", "tool_name")
    raise InvalidInput(
        "The escalation names no tool.",
        fields={
            pointer("meta", "tool_name"): ["Send the tool call in request.context (or its name)."]
        },
    )


def approval_rule_for_request(
    agent: Agent, request: dict[str, Any], meta: dict[str, Any]
) -> tuple[CustomAgent | None, ApprovalRule]:
    """The custom agent and rule of a validated request wire + meta (InvalidInput otherwise)."""
    if request["interception_point"] != ESCALATING_POINT:
        raise InvalidInput(
            "Nothing escalates at this interception point.",
            fields={
                pointer("request", "interception_point"): [
                    "The console's hooks ask for approval only at pre_tool_call."
                ]
            },
        )
    custom_agent = None
    if meta.get("custom_agent"):
        custom_agent = find_custom_agent(agent, meta["custom_agent"])
        if custom_agent is None:
            raise InvalidInput(
                "Unknown custom agent.",
                fields={
                    pointer("meta", "custom_agent"): [
                        f"No custom agent {meta['custom_agent']!r} on agent {agent.slug}."
                    ]
                },
            )
    named = _named_hook(request, meta)
    tool_name, tool_at = _tool_name(request, meta)
    rule = approval_rule(
        agent=agent, custom_agent=custom_agent, tool_name=tool_name, named=named, tool_at=tool_at
    )
    return custom_agent, rule
