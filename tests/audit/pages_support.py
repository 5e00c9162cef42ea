"""Data for the audit page tests: a small, known world stored through the real ingest path.

sre-agent
  sess-alpha (2 h ago): startup, input, restart_service approved by a reviewer (with its
      escalation), Bash denied by the dangerous-command hook, output warned, shutdown
  sess-beta (1 day ago): startup, scale_deployment approval expired, [seq 2–3 missing],
      read_logs host error, shutdown
other-agent (evaluate_only)
  sess-gamma (3 days ago, custom agent triage): startup, Bash denied, transform, shutdown
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from agents.models import AgentToken
from audit.models import InterceptionRecord
from console.actors import AgentPrincipal
from demo.records import record_item, store_items

APPROVAL_HOOK = "hk_approval001"
AUDIT_HOOK = "hk_audit000001"
DANGER_HOOK = "hk_danger00001"
STOP_HOOK = "hk_stop0000001"

# (point, outcome, tool, hooks)
ALPHA = [
    ("agent_startup", "allowed", "", ()),
    ("input", "allowed", "", ()),
    ("pre_tool_call", "approved", "restart_service", (APPROVAL_HOOK,)),
    ("post_tool_call", "denied", "Bash", (AUDIT_HOOK, DANGER_HOOK)),
    ("output", "warned", "", (STOP_HOOK,)),
    ("agent_shutdown", "allowed", "", ()),
]
BETA = [
    (0, "agent_startup", "allowed", "", ()),
    (1, "pre_tool_call", "expired", "scale_deployment", (APPROVAL_HOOK,)),
    (4, "post_tool_call", "host_error", "read_logs", (AUDIT_HOOK,)),
    (5, "agent_shutdown", "allowed", "", ()),
]
GAMMA = [
    ("agent_startup", "allowed", "", ()),
    ("post_tool_call", "denied", "Bash", (DANGER_HOOK,)),
    ("pre_model_call", "transformed", "", ()),
    ("agent_shutdown", "allowed", "", ()),
]


@dataclass
class World:
    records: dict[str, list[InterceptionRecord]] = field(default_factory=dict)
    escalation: Any = None

    def record(self, session: str, sequence: int) -> InterceptionRecord:
        return next(r for r in self.records[session] if r.sequence == sequence)


def session_items(
    session_id: str,
    steps: list[tuple[Any, ...]],
    *,
    start: dt.datetime,
    mode: str = "enforce",
    custom_agent: str = "",
) -> list[dict[str, Any]]:
    """Items for steps of (point, outcome, tool, hooks), or (sequence, point, …) to skip."""
    items = []
    for index, step in enumerate(steps):
        sequence, rest = (step[0], step[1:]) if isinstance(step[0], int) else (index, step)
        point, outcome, tool, hooks = rest
        items.append(
            record_item(
                session_id=session_id,
                sequence=sequence,
                point=point,
                at=start + dt.timedelta(seconds=10 * sequence),
                outcome=outcome,
                mode=mode,
                tool_name=tool,
                custom_agent=custom_agent,
                hooks=hooks,
            )
        )
    return items


def build_world(sre: Any, other: Any, reviewer: User) -> World:
    now = timezone.now().replace(microsecond=0)
    alpha_start = now - dt.timedelta(hours=2)
    store_items(sre.agent, session_items("sess-alpha", ALPHA, start=alpha_start))
    store_items(sre.agent, session_items("sess-beta", BETA, start=now - dt.timedelta(days=1)))
    store_items(
        other.agent,
        session_items(
            "sess-gamma",
            GAMMA,
            start=now - dt.timedelta(days=3),
            mode="evaluate_only",
            custom_agent="triage",
        ),
    )
    world = World()
    for session in ("sess-alpha", "sess-beta", "sess-gamma"):
        world.records[session] = list(
            InterceptionRecord.objects.filter(session_id=session).order_by("sequence")
        )
    world.escalation = approve_in_session(
        sre, reviewer, session_id="sess-alpha", at=alpha_start + dt.timedelta(seconds=21)
    )
    return world


def approve_in_session(sre: Any, reviewer: User, *, session_id: str, at: dt.datetime) -> Any:
    """An escalation of restart_service inside the session, approved by `reviewer` after
    30 s, through the approvals services; then moved to the session's time (created_at is
    auto_now_add, so the service can only open it now)."""
    from agents import services as agent_services
    from approvals import services as approval_services
    from approvals.models import Escalation

    # The console accepts the escalation only for a call an approval hook matches.
    agent_services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw={"type": "approval", "matcher": "restart_service"},
    )
    token = AgentToken.objects.get(agent=sre.agent)
    principal = AgentPrincipal(agent=sre.agent, token=token)
    escalation, _ = approval_services.escalation_create(
        actor=principal,
        request={
            "context_identity": f"{session_id}:2",
            "interception_point": "pre_tool_call",
            "verdict": {
                "decision": "deny",
                "reason": "console:approval_required",
                "message": "restart_service needs a reviewer's approval.",
                "approval": {},
            },
        },
        meta={"session_id": session_id, "tool_name": "restart_service"},
    )
    approval_services.escalation_decide(
        escalation=escalation, actor=reviewer, outcome="approve", reason="Maintenance window."
    )
    Escalation.objects.filter(pk=escalation.pk).update(
        created_at=at, decided_at=at + dt.timedelta(seconds=30)
    )
    escalation.refresh_from_db()
    return escalation
