"""Monthly record partitions on PostgreSQL (audit.partitions, migration 0008): where rows
land, partitions made ahead, retention by partition drop, and exact replays."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from audit import partitions
from audit.chain import chain_seal, chain_verify
from audit.models import ChainHead, InterceptionRecord, RecordSeal
from audit.partitions import DEFAULT_PARTITION, add_months, month_floor, partition_for
from audit.services import records_purge
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import items, sdk_session

pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]


def stamp(when: dt.datetime) -> str:
    utc = when.astimezone(dt.UTC)
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.%fZ")  # %Y does not pad year 1


def post(client: Any, agent: Any, batch: list[dict[str, Any]]) -> dict[str, int]:
    response = client.post(
        "/api/v1/records",
        data=json.dumps(batch),
        content_type="application/json",
        **agent.headers(),
    )
    assert response.status_code == 202, response.content
    return response.json()


def session_at(when: dt.datetime | None, calls: list[str]) -> list[dict[str, Any]]:
    batch = items(sdk_session(calls))
    for item in batch:
        if when is None:
            del item["record"]["timestamp"]
        else:
            item["record"]["timestamp"] = stamp(when)
    return batch


def homes() -> dict[int, str]:
    """Record id -> the partition holding it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, tableoid::regclass::text FROM audit_interceptionrecord")
        return dict(cursor.fetchall())


def tables() -> set[str]:
    with connection.cursor() as cursor:
        return {p.name for p in partitions.monthly_partitions(cursor)}


def test_the_table_is_partitioned_with_months_ahead_and_a_default(settings):
    assert partitions.is_partitioned()
    now = month_floor(timezone.now())
    ahead = {partition_for(add_months(now, n)).name for n in range(4)}
    assert ahead <= tables()
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [DEFAULT_PARTITION])
        assert cursor.fetchone()[0]


def test_records_land_in_their_month_and_out_of_range_ones_in_the_default(client, sre):
    now = timezone.now()
    post(client, sre, session_at(now, ["ls"]))
    ancient = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
    future = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)
    post(client, sre, session_at(ancient, ["ls"]))
    post(client, sre, session_at(future, ["ls"]))
    where = homes()
    by_time = {r.pk: r.timestamp for r in InterceptionRecord.objects.all()}
    assert {where[pk] for pk, ts in by_time.items() if ts == now} == {partition_for(now).name}
    assert {where[pk] for pk, ts in by_time.items() if ts in (ancient, future)} == {
        DEFAULT_PARTITION
    }
    chain_seal(sre.agent.pk)
    assert chain_verify(sre.agent).ok


def test_a_new_month_takes_over_its_rows_from_the_default_partition(client, sre):
    later = add_months(month_floor(timezone.now()), 6) + dt.timedelta(days=3)
    assert partition_for(later).name not in tables()
    post(client, sre, session_at(later, ["ls"]))
    ids = set(InterceptionRecord.objects.values_list("id", flat=True))
    assert set(homes().values()) == {DEFAULT_PARTITION}
    chain_seal(sre.agent.pk)
    created = partitions.partitions_ensure(months_ahead=7)
    assert partition_for(later).name in created and partition_for(later).name in tables()
    assert partitions.partitions_ensure(months_ahead=7) == []  # idempotent
    assert set(homes().values()) == {partition_for(later).name}
    assert set(homes()) == ids
    assert chain_verify(sre.agent).ok


@pytest.fixture
def old_month() -> partitions.Partition:
    """A monthly partition 14 months back (the test database was migrated empty, so its
    partitions start at the current month)."""
    month = add_months(month_floor(timezone.now()), -14)
    with connection.cursor() as cursor:
        return partitions.create_partition(cursor, month)


def test_retention_drops_a_whole_month_and_the_chain_still_verifies(client, sre, old_month):
    post(client, sre, session_at(old_month.lower + dt.timedelta(days=2), ["ls", "rm"]))  # 6
    post(client, sre, session_at(old_month.lower + dt.timedelta(days=20), ["ls"]))  # 5
    post(client, sre, session_at(timezone.now(), ["deploy"]))  # 5
    chain_seal(sre.agent.pk)
    assert set(homes().values()) == {old_month.name, partition_for(timezone.now()).name}
    assert records_purge(actor=None, before=old_month.upper) == 11
    assert old_month.name not in tables()
    assert InterceptionRecord.objects.count() == 5
    head = ChainHead.objects.get(agent=sre.agent)
    assert (head.base_seq, head.last_seq, head.purged) == (11, 16, 11)
    assert RecordSeal.objects.filter(agent=sre.agent).count() == 5
    event = GovernanceEvent.objects.get(action="records.purged")
    assert event.after["partition"] == old_month.name and event.after["purged"] == 11
    assert event.after["chain_base_hash"] == head.base_hash
    report = chain_verify(sre.agent)
    assert report.ok and report.verified == 5


def test_a_month_not_holding_a_chain_prefix_waits_and_rows_go_in_chain_order(
    client, sre, old_month
):
    post(client, sre, session_at(old_month.lower + dt.timedelta(days=2), ["ls"]))  # seq 1-5
    post(client, sre, session_at(timezone.now(), ["deploy"]))  # seq 6-10
    post(client, sre, session_at(old_month.lower + dt.timedelta(days=3), ["rm"]))  # 11-15, late
    chain_seal(sre.agent.pk)
    # The month holds chain positions 1-5 and 11-15: not a prefix, so it is not dropped;
    # the row pass removes the prefix 1-5 and stops at the kept record 6.
    assert records_purge(actor=None, before=old_month.upper) == 5
    assert old_month.name in tables()
    assert ChainHead.objects.get(agent=sre.agent).base_seq == 5
    assert chain_verify(sre.agent).ok


def test_unsealed_rows_keep_their_month(client, sre, old_month):
    post(client, sre, session_at(old_month.lower + dt.timedelta(days=2), ["ls"]))
    assert records_purge(actor=None, before=old_month.upper) == 0
    assert old_month.name in tables()


def test_an_empty_past_month_is_dropped(old_month):
    assert records_purge(actor=None, before=old_month.upper) == 0
    assert old_month.name not in tables()


def test_a_replay_is_a_duplicate_with_or_without_a_timestamp(client, sre):
    timed = session_at(timezone.now(), ["ls"])
    untimed = session_at(None, ["ls", "rm"])
    assert post(client, sre, timed) == {"accepted": 5, "duplicates": 0}
    assert post(client, sre, untimed) == {"accepted": 6, "duplicates": 0}
    assert post(client, sre, untimed) == {"accepted": 0, "duplicates": 6}
    # A mixed batch: the untimed ones already stored, the timed ones replayed, one new.
    fresh = session_at(None, ["deploy"])[:1]
    assert post(client, sre, untimed + timed + fresh) == {"accepted": 1, "duplicates": 11}
    assert InterceptionRecord.objects.count() == 12
    chain_seal(sre.agent.pk)
    assert chain_verify(sre.agent).ok
