"""50 reviewers decide one escalation at the same instant: exactly one decision wins (row
locks order them on PostgreSQL; on SQLite, the embedded default, IMMEDIATE transactions do)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from approvals import services
from approvals.models import Escalation, EscalationStatus, EscalationVote
from console.errors import Conflict
from console.governance.models import GovernanceEvent
from tests.approvals.conftest import make_reviewer

DECIDERS = 50


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_decisions_one_wins(escalate):
    escalation = escalate()
    reviewers = [make_reviewer(f"reviewer{n:02d}") for n in range(DECIDERS)]
    barrier = threading.Barrier(DECIDERS)
    results: list[str] = []
    lock = threading.Lock()

    def decide(index: int) -> None:
        outcome = "approve" if index % 2 else "reject"
        try:
            target = Escalation.objects.get(pk=escalation.pk)
            barrier.wait(timeout=30)
            services.escalation_decide(
                escalation=target, actor=reviewers[index], outcome=outcome, reason=f"r{index}"
            )
            result = f"won:{outcome}"
        except Conflict:
            result = "conflict"
        except Exception as exc:  # anything else is a bug the assertion below shows
            result = f"error:{type(exc).__name__}:{exc}"
        finally:
            connection.close()
        with lock:
            results.append(result)

    threads = [threading.Thread(target=decide, args=(n,)) for n in range(DECIDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    winners = [r for r in results if r.startswith("won:")]
    assert len(results) == DECIDERS
    assert len(winners) == 1, results
    assert results.count("conflict") == DECIDERS - 1, results
    escalation.refresh_from_db()
    expected = (
        EscalationStatus.APPROVED if winners[0] == "won:approve" else EscalationStatus.REJECTED
    )
    assert escalation.status == expected
    assert EscalationVote.objects.filter(escalation=escalation).count() == 1
    decided = GovernanceEvent.objects.filter(object_id=str(escalation.pk)).exclude(
        action="escalation.created"
    )
    assert decided.count() == 1
