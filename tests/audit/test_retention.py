"""Retention: old records go in chain order, each purge is a governance event, and the
remaining chain still verifies from the checkpoint."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.utils import timezone

from audit.chain import chain_seal, chain_verify
from audit.models import ChainHead, InterceptionRecord
from audit.partitions import is_partitioned
from audit.retention import purge_cutoff
from audit.services import records_purge
from audit.tasks import records_purge_expired
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import items, sdk_session

pytestmark = pytest.mark.django_db


def ingest_at(client: Any, agent: Any, when: dt.datetime, calls: list[str]) -> None:
    batch = items(sdk_session(calls))
    for item in batch:
        item["record"]["timestamp"] = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    response = client.post(
        "/api/v1/records",
        data=json.dumps(batch),
        content_type="application/json",
        **agent.headers(),
    )
    assert response.status_code == 202


@pytest.fixture
def history(client, sre, settings) -> dict[str, dt.datetime]:
    now = timezone.now()
    ancient, old, recent = now - dt.timedelta(days=500), now - dt.timedelta(days=401), now
    ingest_at(client, sre, ancient, ["ls", "rm"])  # 6 records
    ingest_at(client, sre, old, ["ls"])  # 5 records
    ingest_at(client, sre, recent, ["deploy"])  # 5 records
    chain_seal(sre.agent.pk)
    return {"ancient": ancient, "old": old, "recent": recent}


def test_periodic_task_purges_records_past_the_retention_setting(sre, history, settings):
    settings.CONSOLE_RECORD_RETENTION_DAYS = 400
    cutoff = purge_cutoff(timezone.now(), 400)
    due = InterceptionRecord.objects.filter(agent=sre.agent, timestamp__lt=cutoff).count()
    # SQLite: the exact cutoff; partitioned PostgreSQL: the first instant of its month.
    assert due == (11 if cutoff > history["old"] else 6)
    assert records_purge_expired() == due
    left = InterceptionRecord.objects.filter(agent=sre.agent)
    assert left.count() == 16 - due
    assert all(record.timestamp >= cutoff for record in left)


def test_the_periodic_cutoff_keeps_whole_months_only_when_partitioned():
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    cutoff = purge_cutoff(now, 400)
    exact = now - dt.timedelta(days=400)
    assert cutoff == (dt.datetime(2025, 10, 1, tzinfo=dt.UTC) if is_partitioned() else exact)


def test_purge_writes_a_governance_event_and_moves_the_chain_checkpoint(sre, history):
    purged = records_purge(actor=None, before=history["old"])
    assert purged == 6
    event = GovernanceEvent.objects.get(action="records.purged")
    assert event.agent == sre.agent and event.actor_label == "system"
    assert event.after["purged"] == 6 and "Purged 6 records of sre-agent" in event.summary
    head = ChainHead.objects.get(agent=sre.agent)
    assert (head.base_seq, head.purged, head.last_seq) == (6, 6, 16)
    assert event.after["chain_base_hash"] == head.base_hash
    report = chain_verify(sre.agent)
    assert report.ok and report.verified == 10


def test_small_batches_purge_everything_due_and_the_chain_still_verifies(sre, history):
    assert records_purge(actor=None, before=history["recent"], batch_size=4) == 11
    assert chain_verify(sre.agent).ok
    assert GovernanceEvent.objects.filter(action="records.purged").count() == 1


def test_tampering_after_a_purge_is_still_caught(sre, history):
    records_purge(actor=None, before=history["old"])
    InterceptionRecord.objects.filter(agent=sre.agent).order_by("id").first().delete()
    report = chain_verify(sre.agent)
    assert report.problem is not None and report.problem.kind == "deleted"


def test_nothing_due_means_no_event(sre, history):
    assert records_purge(actor=None, before=history["ancient"] - dt.timedelta(days=1)) == 0
    assert not GovernanceEvent.objects.filter(action="records.purged").exists()


def test_unsealed_records_wait_for_their_seal(client, sre, history):
    ingest_at(client, sre, history["ancient"], ["ls"])  # pending, not sealed
    assert records_purge(actor=None, before=history["recent"]) == 11
    assert InterceptionRecord.objects.filter(timestamp__lt=history["recent"]).count() == 5
    chain_seal(sre.agent.pk)
    later = history["recent"] + dt.timedelta(seconds=1)
    assert records_purge(actor=None, before=later) == 10
    assert chain_verify(sre.agent).ok and ChainHead.objects.get(agent=sre.agent).base_seq == 21


def test_a_young_record_keeps_older_ones_after_it_in_the_chain(client, sre, history):
    ingest_at(client, sre, history["ancient"], ["ls"])  # sealed after the recent ones
    chain_seal(sre.agent.pk)
    assert records_purge(actor=None, before=history["recent"]) == 11
    assert InterceptionRecord.objects.filter(timestamp=history["ancient"]).count() == 5
