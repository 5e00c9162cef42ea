"""The nav counter past COUNTER_EXPIRIES_MAX open rows: the number is still exactly what each
reviewer may see (their reach, open rows only), and the page gets the soonest expiries."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import frames, services
from approvals.models import Escalation, EscalationStatus
from approvals.selectors import COUNTER_EXPIRIES_MAX, pending_counter
from tests.approvals.conftest import make_reviewer

pytestmark = pytest.mark.django_db


def _copies(template: Escalation, agent_id: int, rows: list[dict]) -> list[Escalation]:
    """One copy of `template` for `agent_id` per item of `rows` (its fields overridden)."""
    values = {
        field.attname: getattr(template, field.attname)
        for field in Escalation._meta.concrete_fields
        if not field.primary_key
    }
    return Escalation.objects.bulk_create(
        Escalation(
            **{
                **values,
                "id": uuid.uuid4(),
                "agent_id": agent_id,
                "context_identity": uuid.uuid4().hex,
                **fields,
            }
        )
        for fields in rows
    )


def test_past_the_expiry_cap_each_reviewer_counts_exactly_the_open_rows_they_may_see(
    alice, rita, sre, other, escalate
):
    template = escalate()
    now = timezone.now()
    soon = [now + timedelta(minutes=5, seconds=i) for i in range(COUNTER_EXPIRIES_MAX + 2)]
    _copies(template, sre.agent.pk, [{"expires_at": moment} for moment in soon])
    _copies(template, other.agent.pk, [{}] * 3)
    _copies(template, sre.agent.pk, [{"expires_at": now - timedelta(seconds=1)}] * 2)
    _copies(template, sre.agent.pk, [{"status": EscalationStatus.REJECTED}] * 4)
    sam, olga = make_reviewer("sam"), make_reviewer("olga")
    services.reviewer_scope_set(actor=None, user=sam, agents=[sre.agent])
    services.reviewer_scope_set(actor=None, user=olga, agents=[other.agent])
    sre_open = len(soon) + 1  # and the template
    for person, wanted in ((alice, sre_open + 3), (rita, sre_open + 3), (sam, sre_open), (olga, 3)):
        counter = pending_counter(person, now=now)
        assert counter.count == wanted, person.username
        assert len(counter.expiries) == min(wanted, COUNTER_EXPIRIES_MAX)
        assert list(counter.expiries) == sorted(counter.expiries)
    html = frames.counter(sam)
    assert f'data-count="{sre_open}"' in html
    expiries = re.search(r'data-expiries="([0-9 ]*)"', html).group(1).split()
    assert len(expiries) == COUNTER_EXPIRIES_MAX
    assert [int(ms) for ms in expiries] == [
        int(moment.timestamp() * 1000) for moment in soon[:COUNTER_EXPIRIES_MAX]
    ]
