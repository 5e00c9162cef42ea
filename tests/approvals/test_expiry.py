"""The expiry sweep (approvals.tasks.escalation_expire_overdue) with a controlled clock."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services, tasks
from approvals.models import EscalationStatus
from console.errors import Conflict
from console.governance.models import GovernanceEvent


def test_sweep_expires_only_overdue_pending_escalations(escalate, rita):
    overdue = escalate()
    decided = escalate("scale_deployment")
    fresh = escalate("restart_service", {"service": "web"})
    services.escalation_decide(escalation=decided, actor=rita, outcome="approve")
    later = overdue.expires_at + timedelta(seconds=1)
    fresh.expires_at = later + timedelta(minutes=5)
    fresh.save(update_fields=["expires_at"])

    assert services.escalation_expire_overdue(now=later) == 1
    for escalation in (overdue, decided, fresh):
        escalation.refresh_from_db()
    assert overdue.status == EscalationStatus.EXPIRED
    assert overdue.decided_at == overdue.expires_at
    assert overdue.decided_by is None and overdue.decision_reason == "approval_expired"
    assert decided.status == EscalationStatus.APPROVED
    assert fresh.status == EscalationStatus.PENDING
    event = GovernanceEvent.objects.get(action="escalation.expired")
    assert event.object_id == str(overdue.pk) and event.actor_label == "system"


def test_sweep_before_expiry_changes_nothing(escalate):
    escalation = escalate()
    assert services.escalation_expire_overdue(now=escalation.expires_at - timedelta(seconds=1)) == 0
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_the_periodic_task_uses_the_current_clock(escalate, monkeypatch):
    escalation = escalate()
    frozen = escalation.expires_at + timedelta(hours=1)
    monkeypatch.setattr(timezone, "now", lambda: frozen)
    assert tasks.escalation_expire_overdue.apply().get() == 1
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.EXPIRED


def test_an_expired_escalation_refuses_decisions(escalate, rita):
    escalation = escalate()
    services.escalation_expire_overdue(now=escalation.expires_at)
    with pytest.raises(Conflict):
        services.escalation_decide(escalation=escalation, actor=rita, outcome="approve")


def test_the_sweep_is_scheduled_in_beat(settings):
    tasks_scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "approvals.tasks.escalation_expire_overdue" in tasks_scheduled
    assert "approvals.tasks.escalation_purge_payloads" in tasks_scheduled


def test_tasks_are_registered_for_the_embedded_beat_without_a_worker():
    """The embedded beat looks tasks up by name in a process that never autodiscovers."""
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "from console.celery import app; from console.scheduler import EmbeddedBeat; "
        "EmbeddedBeat(settings.CELERY_BEAT_SCHEDULE); "
        "print(sorted(n for n in app.tasks if n.startswith('approvals.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "approvals.tasks.escalation_expire_overdue" in out
    assert "approvals.tasks.escalation_purge_payloads" in out
