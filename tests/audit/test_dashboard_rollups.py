"""The dashboard's rollups (audit/rollups.py): exact after ingest, replays, sealing, purge
and rebuild; and every dashboard card's link finds exactly the records the card counts."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from audit import dashboard, rollups
from audit.chain import chain_seal_all
from audit.dashboard_wait import reviewer_wait
from audit.models import (
    InterceptionRecord,
    RecordProblemRollup,
    RecordRollup,
    RecordSealPending,
    RollupGrain,
)
from audit.selectors import records_filter
from audit.services import records_purge
from demo.records import record_item, store_items
from tests.audit.pages_support import AUDIT_HOOK, DANGER_HOOK, World
from tests.audit.rollup_support import MINUTES_COMPARED, assert_rollups_match_records

pytestmark = pytest.mark.django_db


def _items(
    session: str, at: dt.datetime, outcomes: list[str], **extra: Any
) -> list[dict[str, Any]]:
    points = ["agent_startup", *["pre_tool_call"] * (len(outcomes) - 1)]
    return [
        record_item(
            session_id=session,
            sequence=i,
            point=points[i],
            at=at + dt.timedelta(seconds=i),
            outcome=outcome,
            hooks=(AUDIT_HOOK, DANGER_HOOK) if outcome != "allowed" else (),
            **extra,
        )
        for i, outcome in enumerate(outcomes)
    ]


def test_sealing_counts_each_stored_record_once_and_a_replay_adds_nothing(sre: Any) -> None:
    now = timezone.now()
    batch = _items(
        "s-1", now - dt.timedelta(minutes=5), ["allowed", "denied", "host_error", "expired"]
    )
    assert store_items(sre.agent, batch).accepted == 4
    chain_seal_all()
    assert_rollups_match_records()
    day = RecordRollup.objects.filter(grain=RollupGrain.DAY)
    assert sum(day.values_list("records", flat=True)) == 4
    # The same batch again, plus one new record: only the new one is stored and counted.
    replay = [*batch, *_items("s-2", now - dt.timedelta(days=2), ["denied"])]
    result = store_items(sre.agent, replay)
    assert (result.accepted, result.duplicates) == (1, 4)
    chain_seal_all()
    chain_seal_all()  # nothing left to seal: counts nothing twice
    assert_rollups_match_records()
    assert sum(day.values_list("records", flat=True)) == 5
    assert sum(day.values_list("startups", flat=True)) == 2


def test_purge_subtracts_exactly_the_records_it_deletes(sre: Any, other: Any) -> None:
    now = timezone.now()
    store_items(sre.agent, _items("old", now - dt.timedelta(days=500), ["allowed", "denied"]))
    store_items(sre.agent, _items("new", now - dt.timedelta(hours=1), ["denied", "rejected"]))
    store_items(other.agent, _items("o", now - dt.timedelta(days=450), ["host_error"]))
    chain_seal_all()
    assert records_purge(actor=None, before=now - dt.timedelta(days=400)) == 3
    assert_rollups_match_records()
    assert not RecordRollup.objects.filter(bucket__lt=now - dt.timedelta(days=400)).exists()
    assert not RecordProblemRollup.objects.filter(bucket__lt=now - dt.timedelta(days=400)).exists()
    assert (
        sum(RecordRollup.objects.filter(grain=RollupGrain.DAY).values_list("records", flat=True))
        == 2
    )


def test_rebuild_counts_every_record_but_the_ones_waiting_for_their_seal(sre: Any) -> None:
    now = timezone.now()
    store_items(sre.agent, _items("a", now - dt.timedelta(hours=30), ["allowed", "denied"]))
    chain_seal_all()
    store_items(sre.agent, _items("b", now - dt.timedelta(minutes=3), ["warned", "host_error"]))
    assert RecordSealPending.objects.exists()  # "b" waits: sealing runs on commit
    RecordRollup.objects.all().delete()
    RecordProblemRollup.objects.all().delete()
    assert rollups.rollups_rebuild() == 2
    assert_rollups_match_records()
    chain_seal_all()  # the sealer then adds "b", and nothing is counted twice
    assert_rollups_match_records()
    assert rollups.rollups_rebuild() == 4
    assert_rollups_match_records()


def test_minute_rows_are_pruned_but_hours_and_days_keep_counting(sre: Any) -> None:
    now = timezone.now()
    # An hour past the helper's horizon, not on it: there, a test started in a minute's last
    # second put its second record (+1 s) into a minute the helper still compared, and failed.
    at = now - MINUTES_COMPARED - dt.timedelta(hours=1)
    store_items(sre.agent, _items("a", at, ["allowed", "denied"]))
    chain_seal_all()
    assert RecordRollup.objects.filter(grain=RollupGrain.MINUTE).exists()
    assert rollups.minute_rows_prune(now) > 0
    assert not RecordRollup.objects.filter(grain=RollupGrain.MINUTE).exists()
    hours = RecordRollup.objects.filter(grain=RollupGrain.HOUR)
    assert sum(hours.values_list("records", flat=True)) == 2
    assert_rollups_match_records()


def _count_of(url: str, user: User) -> int:
    parts = urlsplit(url)
    assert parts.path == "/audit/"
    return records_filter(dict(parse_qsl(parts.query)), user=user).count()


@pytest.fixture
def busy_world(world: World, sre: Any, other: Any) -> World:
    """The page tests' world (records 2 h, 1 d and 3 d old, waiting for their seal) sealed,
    plus records of the last hour (some sealed, some still waiting), 20 days ago, and one
    dated ahead of now."""
    now = timezone.now()
    chain_seal_all()
    store_items(
        sre.agent,
        _items("recent", now - dt.timedelta(minutes=20), ["allowed", "denied", "expired"]),
    )
    store_items(other.agent, _items("old", now - dt.timedelta(days=20), ["host_error", "rejected"]))
    chain_seal_all()
    store_items(sre.agent, _items("ahead", now + dt.timedelta(days=2), ["allowed"]))
    store_items(
        other.agent,
        _items(
            "fresh",
            now - dt.timedelta(minutes=1),
            ["allowed", "denied", "warned"],
            reason="policy:pii",
        ),
    )
    assert RecordSealPending.objects.count() == 2
    return world


@pytest.mark.parametrize("range_key", ["1h", "24h", "7d", "30d"])
@pytest.mark.parametrize("agent_slug", ["", "sre-agent"])
def test_every_card_counts_exactly_what_its_link_finds(
    busy_world: World, audrey: User, range_key: str, agent_slug: str
) -> None:
    rng = dashboard.RANGES[range_key]
    since = rng.since(timezone.now())
    wait = reviewer_wait(since=since, bar=rng.bar, agent_slug=agent_slug or None)
    context = dashboard.dashboard_context(rng, since=since, agent_slug=agent_slug, wait=wait)
    checked = 0
    for tile in context["tiles"]:
        assert tile["count"] == _count_of(tile["url"], audrey), tile
        checked += 1
    for name in ("outcomes_table", "reasons_table", "hooks_table", "agents_table"):
        for row in context[name]["rows"]:
            assert row["link"], (name, row)
            assert row["cells"][-1] == _count_of(row["link"], audrey), (name, row)
            checked += 1
    assert context["tiles"][0]["count"] > 0 and checked > 8
    # the bars hold the window's records, all but the one dated ahead of now (sre-agent's)
    bars = sum(row["cells"][-1] for row in context["outcomes_table"]["rows"])
    assert bars == context["totals"]["records"] - 1


def test_dashboard_page_links_each_tile_and_bar_to_its_search(
    auditor_client: Client, busy_world: World, audrey: User
) -> None:
    body = auditor_client.get("/audit/dashboard/?range=1h").content.decode()
    tiles = re.findall(r'id="tile-(\w+)" href="([^"]+)"><span class="tile-num">(\d+)<', body)
    assert len(tiles) == 6
    for _key, url, count in tiles:
        assert int(count) == _count_of(url.replace("&amp;", "&"), audrey)
    assert "outcome=denied%2Crejected%2Cexpired" in body
    outcomes = body[body.index('id="chart-outcomes"') :]
    bar_links = re.findall(
        r'<a href="(/audit/\?since=[^"]+)" aria-label="[^"]+: (\d+) records">', outcomes
    )
    assert bar_links
    for url, count in bar_links:
        assert int(count) == _count_of(url.replace("&amp;", "&"), audrey)


def test_dashboard_reads_rollups_not_records(
    auditor_client: Client, busy_world: World, django_assert_max_num_queries: Any
) -> None:
    chain_seal_all()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        auditor_client.get("/audit/dashboard/?range=30d")
    reads = [q["sql"] for q in queries.captured_queries if "audit_interceptionrecord" in q["sql"]]
    assert reads == []  # nothing waits for a seal: not one query touches the records


def test_search_takes_an_outcome_list_and_exact_reason_and_deciding_hook(
    world: World, audrey: User, auditor_client: Client
) -> None:
    def count(**params: str) -> int:
        return records_filter(params, user=audrey).count()

    assert (
        count(outcome="denied,expired") == count(outcome="denied") + count(outcome="expired") == 3
    )
    assert count(reason="console:hook_blocked") == 2
    assert count(reason="console:hook") == 0  # exact, unlike q
    assert count(decided_hook=DANGER_HOOK) == 2
    response = auditor_client.get("/api/v1/records?outcome=denied,bogus")
    assert response.status_code == 400
    assert "/outcome" in response.json()["error"]["fields"]


def test_dropping_a_time_range_forgets_its_buckets(sre: Any) -> None:
    """What a retention by partition drop calls with the dropped partition's bounds."""
    day = rollups.bucket_start(timezone.now(), RollupGrain.DAY) - dt.timedelta(days=40)
    store_items(sre.agent, _items("gone", day + dt.timedelta(hours=3), ["allowed", "denied"]))
    store_items(sre.agent, _items("kept", day + dt.timedelta(days=1, hours=3), ["allowed"]))
    chain_seal_all()
    with pytest.raises(ValueError):
        rollups.rollups_drop_range(day + dt.timedelta(hours=1), day + dt.timedelta(days=1))
    rollups.rollups_drop_range(day, day + dt.timedelta(days=1))
    InterceptionRecord.objects.filter(session_id="gone").delete()  # the partition's rows
    assert_rollups_match_records()
