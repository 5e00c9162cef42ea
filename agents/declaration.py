"""The effective `agent-hooks-declaration/1.0` document of an agent (+ one custom agent).

The console is the source of truth for hooks; the agent side (console_client) loads this
document with the SDK's own loader (`InterceptionEmitter.from_declaration_value`) against
a registry that knows the console kinds below. Bindings are built in enforcement order:
one allow-all base binding (so points without hooks never deny with
`host_error:no_interceptor`), then the agent-level hooks, then the custom agent's, each
in (event, position) order. A binding's id is the hook's stable key, so records name the
hook in `verdicts[].name`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agent_hooks import DECLARATION_VERSION, SPEC_VERSION, canonical_json
from django.conf import settings

from agents.models import Agent, CustomAgent, Hook
from agents.validation import EVENTS, EXPIRES_DEFAULT, TIMEOUT_DEFAULT
from console_client.interceptors import TOOL_SEAM_HOST_ERROR

# Binding kinds the agent side registers (console_client.interceptors).
KIND_BASE = "console.base"
KIND_BY_TYPE = {
    "command": "console.command",
    "prompt": "console.prompt",
    "approval": "console.approval",
}
BASE_BINDING_ID = "console-base"
RESOLVER_NAME = "console"
POINT_BY_EVENT = {"Stop": "output", "PostToolUse": "post_tool_call", "PreToolUse": "pre_tool_call"}
HOST_NAME = "console-client"

# A hook's own timeout is enforced by its runner; the binding bound is the backstop.
HOOK_TIMEOUT_MARGIN_MS = 5_000
BASE_TIMEOUT_MS = 5_000
APPROVAL_BINDING_TIMEOUT_MS = 5_000
RESOLVER_MARGIN_MS = 30_000
# The declaration schema bounds every timeout at one hour; longer approvals are written as
# null (unbounded) and the console resolver stops at the escalation's own expiry instead.
TIMEOUT_MAX_MS = 3_600_000
MAX_BUFFERED_RECORDS = 1_000


def effective_hooks(agent: Agent, custom_agent: CustomAgent | None) -> list[Hook]:
    """Enabled hooks in enforcement order: agent level first, then the custom agent's."""
    rank = {event: index for index, event in enumerate(EVENTS)}

    def ordered(scope: CustomAgent | None) -> list[Hook]:
        rows = Hook.objects.filter(agent=agent, custom_agent=scope, enabled=True)
        return sorted(rows, key=lambda hook: (rank.get(hook.event, 99), hook.position, hook.pk))

    hooks = ordered(None)
    if custom_agent is not None:
        hooks += ordered(custom_agent)
    return hooks


def _hook_timeout_ms(hook: Hook) -> int:
    seconds = int(hook.definition.get("timeout", TIMEOUT_DEFAULT))
    return min(seconds * 1000 + HOOK_TIMEOUT_MARGIN_MS, TIMEOUT_MAX_MS)


def _binding(hook: Hook) -> dict[str, Any]:
    hook_type = hook.hook_type
    timeout_ms = APPROVAL_BINDING_TIMEOUT_MS if hook_type == "approval" else _hook_timeout_ms(hook)
    return {
        "id": hook.key,
        "kind": KIND_BY_TYPE[hook_type],
        # The hook's mode travels in its kind-specific config (the schema's extension point
        # per binding); console_client.evaluation reads it.
        # `recordReason` (only when on) tells console_client to keep this hook's own reason
        # text in its records (console_client.reasons).
        "config": {
            **hook.definition,
            "mode": hook.mode,
            "name": hook.name,
            **({"recordReason": True} if hook.record_reason else {}),
        },
        "at": [POINT_BY_EVENT[hook.event]],
        "timeout_ms": timeout_ms,
    }


def _resolver_timeout_ms(hooks: list[Hook]) -> int | None:
    default_seconds = int(getattr(settings, "CONSOLE_DEFAULT_ESCALATION_SECONDS", EXPIRES_DEFAULT))
    expiries = [
        int(hook.definition.get("expiresIn", EXPIRES_DEFAULT))
        for hook in hooks
        if hook.hook_type == "approval"
    ]
    longest = max([default_seconds, *expiries]) * 1000 + RESOLVER_MARGIN_MS
    return None if longest > TIMEOUT_MAX_MS else longest


def _interceptor_timeout_ms(hooks: list[Hook]) -> int:
    runnable = [_hook_timeout_ms(hook) for hook in hooks if hook.hook_type != "approval"]
    return max([BASE_TIMEOUT_MS, *runnable])


def declaration_document(agent: Agent, custom_agent: CustomAgent | None) -> dict[str, Any]:
    """The document, with `extensions.console.digest` set to the sha256 of the rest."""
    hooks = effective_hooks(agent, custom_agent)
    document: dict[str, Any] = {
        "declaration": DECLARATION_VERSION,
        "spec": SPEC_VERSION,
        # Slugs are letters, digits, '_', '-', '.', so lowercased they fit the id grammar.
        "id": agent.slug.lower(),
        "host": {"name": HOST_NAME},
        "configuration": {
            "mode": agent.mode,
            # run_all: every matching hook runs, the strictest verdict wins, and
            # the reviewers are asked once when every standing deny is an approval.
            "composition": {"profile": "sequential/run_all"},
            "identity_provider": "jcs-sha256",
            "approval": {"resolver": RESOLVER_NAME, "redactor": None},
            # §13.1: what the agent does on a host error at a tool call (an interceptor
            # that crashed or timed out, the resolver unreachable): the tool does not run
            # (or its result is dropped), the model reads why, and the run goes on. The
            # agent side's HostSurface states the same value, and its loader refuses any
            # other (console_client/tool_seam.py).
            "posture": {"tool_seam_host_error": TOOL_SEAM_HOST_ERROR},
            "timeouts": {
                "interceptor_ms": _interceptor_timeout_ms(hooks),
                "approval_resolver_ms": _resolver_timeout_ms(hooks),
            },
            "records": {"max_buffered": MAX_BUFFERED_RECORDS},
        },
        "bindings": [
            {"id": BASE_BINDING_ID, "kind": KIND_BASE, "config": {}, "timeout_ms": BASE_TIMEOUT_MS},
            *(_binding(hook) for hook in hooks),
        ],
        "extensions": {
            "console": {
                "agent": agent.slug,
                "custom_agent": custom_agent.name if custom_agent else None,
                "revision": agent.revision,
            }
        },
    }
    document["extensions"]["console"]["digest"] = declaration_digest(document)
    return document


def declaration_digest(document: dict[str, Any]) -> str:
    """sha256 over the canonical JSON (RFC 8785) of the document without its own digest."""
    console = dict(document.get("extensions", {}).get("console", {}))
    console.pop("digest", None)
    body = {**document, "extensions": {**document.get("extensions", {}), "console": console}}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
