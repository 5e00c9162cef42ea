"""`manage.py seed_audit_demo`: a fortnight of realistic audit history for the demo agents.

Runs `seed_demo` first (users, the SRE agent and its hooks), adds an evaluate_only agent
and a second enforcing one, then writes hooks sessions through the real ingest path and
the approval requests inside them through the approvals services, decided by the demo
reviewer. Deterministic for a given --seed; running it again stores nothing twice.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from agents import services as agent_services
from agents.auth import agent_principal
from agents.models import Agent, AgentToken, Hook, Mode
from approvals import services as approval_services
from approvals.models import Escalation
from audit.chain import chain_seal_all
from audit.models import Outcome
from audit.selectors import session_stored
from demo.agents import CUSTOM_AGENT, demo_agent_ensure
from demo.records import DemoSession, HookKeys, demo_session_items, store_items

DEMO_AGENTS = (
    ("sre-agent", Mode.ENFORCE, "SRE agent (demo)"),
    ("billing-agent", Mode.EVALUATE_ONLY, "Billing agent (policy rollout, evaluate only)"),
    ("support-agent", Mode.ENFORCE, "Support agent (demo)"),
)
REVIEW_REASONS: dict[str, tuple[str, ...]] = {
    Outcome.APPROVED: ("Planned maintenance window.", "Looks fine.", "Approved per runbook."),
    Outcome.REJECTED: ("Not during business hours.", "Scale-down needs a change ticket."),
}


def _ensure_agent(slug: str, mode: str, display_name: str) -> Agent:
    agent = demo_agent_ensure(slug, display_name=display_name)
    if agent.mode != mode:
        agent = agent_services.agent_set_mode(actor=None, agent=agent, mode=mode)
    return agent


def _hook_keys(agent: Agent) -> HookKeys:
    keys = HookKeys()
    for hook in Hook.objects.filter(agent=agent):
        if hook.custom_agent_id is not None and hook.event == "PostToolUse":
            keys.danger = hook.key
        elif hook.custom_agent_id is None and hook.event == "PostToolUse":
            keys.audit = hook.key
        elif hook.custom_agent_id is None and hook.event == "Stop":
            keys.stop = hook.key
        elif hook.event == "PreToolUse":
            keys.approval = hook.key
    return keys


class Command(BaseCommand):
    help = (
        "Seed realistic interception records, approvals and governance events for the audit pages."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--sessions", type=int, default=120, help="sessions in all (default 120)"
        )
        parser.add_argument("--days", type=int, default=14, help="spread over the last N days")
        parser.add_argument(
            "--seed", type=int, default=7, help="random seed (same seed, same data)"
        )
        parser.add_argument("--no-approvals", action="store_true", help="skip approval requests")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["sessions"] < 1 or options["days"] < 1:
            self.stderr.write("--sessions and --days must be at least 1.")
            raise SystemExit(2)
        call_command("seed_demo", stdout=self.stdout)
        rng = random.Random(options["seed"])
        agents = [_ensure_agent(*spec) for spec in DEMO_AGENTS]
        now = timezone.now()
        accepted = duplicates = approvals = 0
        for n in range(options["sessions"]):
            agent = rng.choices(agents, weights=(6, 3, 2))[0]
            start = now - dt.timedelta(seconds=rng.uniform(600, options["days"] * 86400 - 3600))
            session = demo_session_items(
                rng,
                session_id=f"sess-{rng.getrandbits(48):012x}",
                start=start,
                mode=agent.mode,
                keys=_hook_keys(agent),
                custom_agent=CUSTOM_AGENT if rng.random() < 0.4 else "",
                drop_sequences=2 if n % 29 == 5 else 0,
            )
            # Records are idempotent per (session, sequence, timestamp); a re-run stamps the
            # same sessions at other times, so it skips the sessions already stored.
            if session_stored(agent, session.session_id):
                duplicates += len(session.items)
                continue
            result = store_items(agent, session.items)
            accepted += result.accepted
            duplicates += result.duplicates
            if not options["no_approvals"] and result.accepted:
                approvals += self._approvals(agent, session)
        # Seal now rather than waiting for a worker, so the pages show chain positions.
        sealed = chain_seal_all()
        self.stdout.write(
            self.style.SUCCESS(
                f"Audit demo: {accepted} records stored ({duplicates} already present), "
                f"{approvals} approval requests, {sealed} records sealed."
            )
        )

    def _approvals(self, agent: Agent, session: DemoSession) -> int:
        reviewer = get_user_model().objects.get(username="reviewer")
        token = AgentToken.objects.filter(agent=agent, revoked_at=None).first()
        if token is None:
            token = agent_services.agent_token_issue(
                actor=None, agent=agent, name="audit-demo"
            ).token
        principal = agent_principal(token)
        created = 0
        for step in session.approvals:
            identity = f"{session.session_id}:{step.sequence}"
            request = {
                "context_identity": identity,
                "interception_point": "pre_tool_call",
                "verdict": {
                    "decision": "deny",
                    "reason": "console:approval_required",
                    "message": f"{step.tool_name} needs a reviewer's approval (hook {step.hook}).",
                    "approval": {"hook": step.hook},
                },
            }
            meta = {
                "session_id": session.session_id,
                "tool_name": step.tool_name,
                "hook": step.hook,
            }
            expired = step.outcome == Outcome.EXPIRED
            opened = timezone.now() - dt.timedelta(days=31) if expired else None
            escalation, fresh = approval_services.escalation_create(
                actor=principal, request=request, meta=meta, now=opened
            )
            if not fresh:
                continue
            if expired:
                approval_services.escalation_expire_overdue()
            else:
                approval_services.escalation_decide(
                    escalation=escalation,
                    actor=reviewer,
                    outcome="approve" if step.outcome == Outcome.APPROVED else "reject",
                    reason=REVIEW_REASONS[step.outcome][
                        step.sequence % len(REVIEW_REASONS[step.outcome])
                    ],
                )
            # Demo history: created_at is auto_now_add, so the service can't open an
            # escalation in the past; move it (and its decision) to the session's time.
            Escalation.objects.filter(pk=escalation.pk).update(
                created_at=step.at, decided_at=step.at + dt.timedelta(seconds=step.wait_seconds)
            )
            created += 1
        return created
