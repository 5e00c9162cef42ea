"""Running hooks for a runtime event on the console: the runners and the approval resolver
the shared registry (`console_client.interceptors.build_registry`) is built with.

- command hooks run in the same bubblewrap sandbox as on the agent side
  (`console_client.runners.arun_command_hook`), at most CONSOLE_HOOK_CONCURRENCY at once per
  server process; a hook waiting for a slot counts against its own timeout, so an
  overloaded console fails closed rather than queueing without bound;
- prompt hooks go to the LLM judge configured by CONSOLE_LLM_* (`LLMJudge.from_env`);
- approval hooks (and a hook's `ask`) open an escalation through
  `approvals.services.escalation_create` and wait for the reviewers inside the request, the
  way the agent long-poll waits (`approvals.longpoll.escalation_wait`): no database
  connection is held while waiting, and an expired escalation answers as a rejection.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

from agent_hooks import ApprovalOutcome, ApprovalRequest, ApprovalResolution, HostRegistry, Verdict
from django.conf import settings
from django.utils import timezone

from agents.models import AgentToken
from approvals import services as approval_services
from approvals.longpoll import escalation_wait, released
from approvals.wire import resolution as escalation_resolution
from console.actors import AgentPrincipal
from console_client.client import llm_prompt_runner
from console_client.interceptors import build_registry
from console_client.resolver import ResolverError, approval_request_wire
from console_client.results import HookResult
from console_client.runners import arun_command_hook

# One bound per event loop (a server process serves its requests on one loop).
_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)
REASON_TOKEN_REVOKED = "console:token_revoked"
TOKEN_REVOKED_MESSAGE = "The agent token was revoked while this call waited for reviewers."
# Past an escalation's expiry, how long to keep reading before answering from the clock.
EXPIRY_GRACE_SECONDS = 2.0


def _slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(settings.CONSOLE_HOOK_CONCURRENCY)
    return slots


async def run_command_bounded(
    hook: dict[str, Any], context: dict[str, Any], *, transcript_path: str | None = None
) -> HookResult:
    """A command hook in the sandbox, within the process's concurrency bound."""
    async with _slots():
        return await arun_command_hook(hook, context, transcript_path=transcript_path)


@dataclass
class EscalationResolver:
    """The `console` approval resolver, console side: open the escalation, wait for it."""

    principal: AgentPrincipal
    meta: dict[str, Any]
    resolution: ApprovalResolution | None = field(default=None, init=False)
    escalation_id: str | None = field(default=None, init=False)

    async def resolve(self, request: ApprovalRequest) -> ApprovalResolution:
        approval = request.verdict.approval or {}
        meta = {**self.meta, "hook": approval.get("hook")}
        escalation, _created = await released(approval_services.escalation_create)(
            actor=self.principal, request=approval_request_wire(request), meta=meta
        )
        self.escalation_id = str(escalation.pk)
        while True:
            left = (escalation.expires_at - timezone.now()).total_seconds()
            escalation = await escalation_wait(escalation, max(left, 0.0) + EXPIRY_GRACE_SECONDS)
            resolution = escalation_resolution(escalation)
            if resolution is not None:
                break
            if left < -EXPIRY_GRACE_SECONDS:
                raise ResolverError("escalation stayed pending past its expiry")
        if resolution.context_identity != request.context_identity:
            raise ResolverError("resolution context_identity does not echo the request")
        if not await released(_token_active)(self.principal):
            # A token revoked while its call waited gets no approval.
            resolution = ApprovalResolution(
                ApprovalOutcome.REJECT,
                request.context_identity,
                Verdict.deny(reason=REASON_TOKEN_REVOKED, message=TOKEN_REVOKED_MESSAGE),
            )
        self.resolution = resolution
        return resolution


def _token_active(principal: AgentPrincipal) -> bool:
    return AgentToken.objects.filter(pk=principal.token.pk, revoked_at__isnull=True).exists()


def console_registry(resolver: EscalationResolver) -> HostRegistry:
    """console_client's own registry, with the console-side runners and resolver."""
    return build_registry(
        command_runner=run_command_bounded,
        prompt_runner=llm_prompt_runner(),
        resolver=resolver,
    )
