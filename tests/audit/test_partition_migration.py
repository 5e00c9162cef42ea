"""Migration 0008 on a database holding records: the table becomes partitioned (and back)
with every row, id, id sequence position and the chain intact."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from audit import partitions
from audit.chain import chain_seal, chain_verify
from audit.models import InterceptionRecord
from tests.audit.record_wires import items, sdk_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]

BEFORE = ("audit", "0007_chain_verification")


def migrate(target: tuple[str, str]) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([target])


def snapshot() -> list[tuple[Any, ...]]:
    return list(
        InterceptionRecord.objects.order_by("id").values_list("id", "session_id", "timestamp")
    )


def post(client: Any, agent: Any, when: dt.datetime) -> None:
    batch = items(sdk_session(["ls", "rm"]))
    for item in batch:
        item["record"]["timestamp"] = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    response = client.post(
        "/api/v1/records",
        data=json.dumps(batch),
        content_type="application/json",
        **agent.headers(),
    )
    assert response.status_code == 202, response.content


def test_partitioning_keeps_every_row_id_and_the_chain(client, sre):
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("audit")[0]
    now = timezone.now()
    for when in (now - dt.timedelta(days=40), now - dt.timedelta(days=3000), now):
        post(client, sre, when)
    chain_seal(sre.agent.pk)
    rows = snapshot()
    assert len(rows) == 18
    try:
        migrate(BEFORE)
        assert not partitions.is_partitioned()
        assert snapshot() == rows and chain_verify(sre.agent).ok
        migrate(latest)
    finally:
        migrate(latest)
    assert partitions.is_partitioned()
    assert snapshot() == rows
    report = chain_verify(sre.agent)
    assert report.ok and report.verified == 18
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tableoid::regclass::text, count(*) FROM audit_interceptionrecord GROUP BY 1"
        )
        homes = dict(cursor.fetchall())
    # 40 days back is within retention: its month got a partition; 3000 days back did not.
    assert homes == {
        partitions.partition_for(now - dt.timedelta(days=40)).name: 6,
        partitions.DEFAULT_PARTITION: 6,
        partitions.partition_for(now).name: 6,
    }
    post(client, sre, now + dt.timedelta(seconds=1))  # ids go on after the last one
    assert InterceptionRecord.objects.order_by("-id").first().pk > rows[-1][0]
