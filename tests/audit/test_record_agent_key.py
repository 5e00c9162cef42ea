"""A record's agent without a database foreign key (migration 0015): a batch is still
checked against its agent once (its seal-queue row's key), and an agent that has records
cannot be deleted."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from agents.models import Agent
from audit import services
from audit.ingest import batch_items
from audit.models import InterceptionRecord, RecordSealPending
from tests.audit.record_wires import items, sdk_session


def _conninfo() -> dict[str, object]:
    s = connection.settings_dict
    info = {"dbname": s["NAME"], "user": s["USER"], "host": s["HOST"], "port": s["PORT"]}
    return {k: v for k, v in info.items() if v}


def _post(client, who, batch):
    return client.post(
        "/api/v1/records", data=json.dumps(batch), content_type="application/json", **who.headers()
    )


@pytest.mark.django_db
def test_an_agent_with_records_is_not_deleted_through_django(client, sre):
    assert _post(client, sre, items(sdk_session(["ls"]))).status_code == 202
    with pytest.raises(ProtectedError):
        sre.agent.delete()


@pytest.mark.postgresql
@pytest.mark.django_db
def test_the_database_refuses_deleting_an_agent_that_has_records(client, sre):
    assert _post(client, sre, items(sdk_session(["ls"]))).status_code == 202
    with pytest.raises(IntegrityError, match="still has interception records"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM agents_agent WHERE id = %s", [sre.agent.pk])
    assert Agent.objects.filter(pk=sre.agent.pk).exists()
    # An agent without records is not held back by the trigger.
    bare = Agent.objects.create(slug="bare-agent")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM agents_agent WHERE id = %s", [bare.pk])
    assert not Agent.objects.filter(pk=bare.pk).exists()


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_batch_for_an_agent_that_is_gone_stores_nothing(sre):
    valid = batch_items(items(sdk_session(["ls", "rm"])))
    ghost = Agent(pk=sre.agent.pk + 1000, slug="gone")
    with pytest.raises(IntegrityError, match="agents_agent"):
        services.records_ingest(actor=None, agent=ghost, items=valid)
    assert not InterceptionRecord.objects.exists()
    assert not RecordSealPending.objects.exists()


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_ingest_waits_for_a_writer_holding_its_agent_row(client, sre):
    """What a delete of the agent takes (its row, FOR UPDATE) holds the batch back until
    it ends (the seal-queue row's key check): a batch cannot be stored under an agent
    that is being removed."""
    with psycopg.connect(**_conninfo()) as other:
        other.execute("SELECT id FROM agents_agent WHERE id = %s FOR UPDATE", [sre.agent.pk])
        releaser = threading.Timer(0.5, other.rollback)
        releaser.start()
        began = time.monotonic()
        response = _post(client, sre, items(sdk_session(["ls", "rm"])))
        releaser.join()
    assert time.monotonic() - began >= 0.4
    assert response.status_code == 202, response.content
    assert InterceptionRecord.objects.filter(agent=sre.agent).count() == 6
