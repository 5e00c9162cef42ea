"""The record explorer /audit/: period (relative and absolute), histogram, facets, total,
tool/hook prefix filters and their suggestions, page turns, saved views. Both lanes."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from agents import services as agent_services
from agents.templatetags.hook_tags import soft_breaks
from audit import explorer
from audit.models import SAVED_VIEWS_PER_USER, SavedView
from demo.records import record_item, store_items
from tests.audit.pages_support import DANGER_HOOK, World

HTMX = {"HTTP_HX_REQUEST": "true"}


def _shown(response: Any) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-record="(\d+)"', response.content.decode())]


def _bars(body: str) -> list[tuple[str, int]]:
    """(href, count) of each histogram bar."""
    return [
        (unescape(href), int(value))
        for href, value in re.findall(
            r'<a href="([^"]+)" class="hist-link"[^>]*><rect class="hist-hit"[^>]*/>'
            r'<rect class="bar" data-value="(\d+)"',
            body,
        )
    ]


def _facet(body: str, name: str) -> dict[str, tuple[int, str]]:
    """{value: (count, href)} of one facet of the sidebar."""
    section = body.split(f'data-facet="{name}"', 1)[1].split("</section>", 1)[0]
    return {
        unescape(value): (int(count), unescape(href))
        for href, value, count in re.findall(
            r'<a href="([^"]+)"[^>]*data-value="([^"]*)"[^>]*>.*?'
            r'<span class="facet-count">(\d+)</span>',
            section,
        )
    }


def _total(body: str) -> int:
    return int(re.search(r'data-total="(\d+)"', body).group(1))


@pytest.mark.parametrize(
    ("span", "seconds", "bars"),
    [
        (dt.timedelta(minutes=15), 60, 15),
        (dt.timedelta(hours=1), 60, 60),
        (dt.timedelta(hours=24), 900, 96),
        (dt.timedelta(days=7), 7200, 84),
        (dt.timedelta(days=30), 21600, 120),
        (dt.timedelta(days=400), 604800, 58),
    ],
)
def test_the_bucket_is_chosen_from_the_period(span: dt.timedelta, seconds: int, bars: int) -> None:
    size, _label = explorer.bucket_for(span)
    assert (size, -(-int(span.total_seconds()) // size)) == (seconds, bars)


def test_the_default_period_is_the_last_24_hours(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/").content.decode()
    day_ago = timezone.now() - dt.timedelta(hours=24)
    expected = [r for rs in world.records.values() for r in rs if r.timestamp >= day_ago]
    assert 0 < len(expected) < 14
    assert set(_shown_body(body)) == {r.pk for r in expected}
    assert _total(body) == len(expected)
    assert '<option value="24h" selected>Last 24 hours</option>' in body


def _shown_body(body: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-record="(\d+)"', body)]


def test_relative_ranges_narrow_the_period(auditor_client: Client, world: World) -> None:
    hour = _shown(auditor_client.get("/audit/?range=1h"))
    assert hour == []  # sess-alpha is 2 h old
    assert set(_shown(auditor_client.get("/audit/?range=7d"))) == {
        r.pk for rs in world.records.values() for r in rs
    }


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("range=2w", "range"),
        ("range=24h&since=2026-01-01", "range"),
        ("tool_prefix=" + "x" * 201, "tool_prefix"),
    ],
)
def test_a_bad_period_is_named_and_answered_400(
    auditor_client: Client, world: World, query: str, field: str
) -> None:
    page = auditor_client.get(f"/audit/?{query}")
    assert page.status_code == 400
    assert f"Filter <strong>{field}</strong>" in page.content.decode()
    api = auditor_client.get(f"/api/v1/records?{query}")
    assert api.status_code == 400
    assert list(api.json()["error"]["fields"]) == [f"/{field}"]


def test_the_api_resolves_a_relative_range_when_asked(auditor_client: Client, world: World) -> None:
    answer = auditor_client.get("/api/v1/records?range=24h&outcome=denied").json()
    assert [row["session_id"] for row in answer["results"]] == ["sess-alpha"]
    everything = auditor_client.get("/api/v1/records?range=all&outcome=denied").json()
    assert len(everything["results"]) == 2


def test_the_histogram_counts_the_filter_per_bucket_and_bars_open_their_period(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/?range=7d&agent=sre-agent").content.decode()
    bars = _bars(body)
    assert len(bars) == 85  # 7 days of 2-hour buckets, the first one partial
    assert sum(count for _, count in bars) == _total(body) == 10
    assert 'data-bucket-seconds="7200"' in body
    assert re.search(r'aria-label="[^"]+ UTC, 2 hours: 6 records"', body)
    href = next(href for href, count in bars if count == 6)
    query = parse_qs(urlsplit(href).query)
    assert query["agent"] == ["sre-agent"] and "range" not in query
    since = dt.datetime.fromisoformat(query["since"][0].replace("Z", "+00:00"))
    until = dt.datetime.fromisoformat(query["until"][0].replace("Z", "+00:00"))
    assert until - since == dt.timedelta(hours=2)
    narrowed = auditor_client.get(href)
    assert set(_shown(narrowed)) == {r.pk for r in world.records["sess-alpha"]}


def test_an_all_time_histogram_starts_at_the_oldest_match(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/?range=all").content.decode()
    assert _total(body) == 14
    assert 'data-bucket-seconds="' in body
    empty = auditor_client.get("/audit/?range=all&session_id=nothing").content.decode()
    assert _total(empty) == 0 and 'class="hist-link"' not in empty
    # A period with no match says so in HTML text (readable on a phone), no 960-wide SVG.
    quiet = auditor_client.get("/audit/?range=24h&session_id=nothing").content.decode()
    assert '<p class="hist-empty">No records in this period</p>' in quiet
    assert 'class="hist-plot"' in body and 'class="chart-svg"' not in quiet


def test_facets_count_the_filter_and_a_click_filters(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/?range=7d").content.decode()
    outcomes = _facet(body, "outcome")
    assert outcomes["denied"][0] == 2 and outcomes["allowed"][0] == 7
    assert _facet(body, "agent") == {
        "sre-agent": (10, "/audit/?range=7d&agent=sre-agent"),
        "other-agent": (4, "/audit/?range=7d&agent=other-agent"),
    }
    assert _facet(body, "custom_agent")["triage"][0] == 4
    assert _facet(body, "tool_name")["Bash"][0] == 2
    hooks = _facet(body, "hook")
    assert hooks[DANGER_HOOK][0] == 2
    denied = auditor_client.get(
        outcomes["denied"][1], HTTP_HX_REQUEST="true", HTTP_HX_TARGET="explorer-root"
    )
    assert len(_shown(denied)) == 2
    # A facet re-draws the form with the results, so the form shows the new filter.
    assert denied.content.decode().lstrip().startswith('<div id="explorer-root">')
    assert '<option value="denied" selected>' in denied.content.decode()
    assert denied["HX-Push-Url"] == "/audit/?outcome=denied&range=7d"
    narrowed = denied.content.decode()
    assert _facet(narrowed, "agent") == {
        "sre-agent": (1, "/audit/?outcome=denied&range=7d&agent=sre-agent"),
        "other-agent": (1, "/audit/?outcome=denied&range=7d&agent=other-agent"),
    }
    # The active value is marked and removes its filter; the chip does the same.
    assert _facet(narrowed, "outcome")["denied"][1] == "/audit/?range=7d"
    assert 'data-chip="outcome"' in narrowed and 'href="/audit/?range=7d"' in narrowed


def test_facets_of_a_large_period_count_its_newest_rows(
    auditor_client: Client, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explorer, "FACET_ROWS", 3)
    body = auditor_client.get("/audit/?range=all").content.decode()
    assert _total(body) == 14  # the histogram and the total count everything
    assert "Counted over the newest 3 of the 14 records." in body
    assert {k: v[0] for k, v in _facet(body, "outcome").items()} == {
        "allowed": 1,
        "denied": 1,
        "warned": 1,
    }
    assert {k: v[0] for k, v in _facet(body, "agent").items()} == {"sre-agent": 3}


def test_tool_prefix_is_case_insensitive_and_literal(auditor_client: Client, world: World) -> None:
    shown = set(_shown(auditor_client.get("/audit/?range=all&tool_prefix=RESTART")))
    assert shown == {world.record("sess-alpha", 2).pk}
    both = set(_shown(auditor_client.get("/audit/?range=all&tool_prefix=b")))
    assert both == {world.record("sess-alpha", 3).pk, world.record("sess-gamma", 1).pk}
    assert _shown(auditor_client.get("/audit/?range=all&tool_prefix=%25")) == []
    assert _shown(auditor_client.get("/audit/?range=all&tool_prefix=_ash")) == []


def test_hook_prefix_matches_configured_hook_names(
    auditor_client: Client, sre: Any, world: World
) -> None:
    hook, _ = agent_services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw={"type": "command", "name": "Guard-Shell", "command": "true", "matcher": "Bash"},
    )
    start = timezone.now() - dt.timedelta(minutes=5)
    store_items(
        sre.agent,
        [
            record_item(
                session_id="sess-guard",
                sequence=0,
                point="pre_tool_call",
                at=start,
                outcome="denied",
                tool_name="Bash",
                hooks=(hook.key,),
            )
        ],
    )
    response = auditor_client.get("/audit/?hook_prefix=guard-")
    assert len(_shown(response)) == 1
    assert _shown(auditor_client.get("/audit/?hook_prefix=nomatch")) == []
    options = auditor_client.get("/audit/suggest/hook/?hook_prefix=GUA").content.decode()
    assert '<option value="Guard-Shell">Guard-Shell (sre-agent)</option>' in options


def test_tool_suggestions_are_the_frequent_names_of_the_filter(
    auditor_client: Client, world: World
) -> None:
    options = auditor_client.get("/audit/suggest/tool/?range=7d&tool_prefix=").content.decode()
    assert re.findall(r'<option value="([^"]+)">', options)[0] == "Bash"
    narrowed = auditor_client.get(
        "/audit/suggest/tool/?range=7d&tool_prefix=re&agent=sre-agent"
    ).content.decode()
    assert re.findall(r'<option value="([^"]+)">', narrowed) == ["read_logs", "restart_service"]
    bad = auditor_client.get("/audit/suggest/tool/?range=nope&tool_prefix=b")
    assert bad.status_code == 200 and bad.content.decode().strip() == ""


def test_a_page_turn_swaps_only_the_list_and_keeps_its_place_in_the_url(
    auditor_client: Client, world: World
) -> None:
    first = auditor_client.get("/audit/?range=all&limit=5").content.decode()
    older = unescape(re.search(r'rel="next" href="([^"]+)"', first).group(1))
    assert 'hx-target="#record-list"' in first
    turn = auditor_client.get(older, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="record-list")
    body = turn.content.decode()
    assert body.lstrip().startswith('<div id="record-list">')
    assert "hist-link" not in body and "data-facet" not in body
    assert turn["HX-Push-Url"] == older
    # Opening the pushed URL (back button, shared link) shows the same page.
    assert _shown(auditor_client.get(older)) == _shown(turn)


def test_saved_views_are_per_user_and_open_as_their_link(
    auditor_client: Client, audrey: User, alice: User, admin_client: Client, world: World
) -> None:
    response = auditor_client.post(
        "/audit/views/", {"name": "Denied this week", "query": "?range=7d&outcome=denied&cursor=x"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/audit/?outcome=denied&range=7d"
    view = SavedView.objects.get(owner=audrey)
    assert view.query == "outcome=denied&range=7d"
    body = auditor_client.get("/audit/").content.decode()
    assert 'data-saved-view="Denied this week"' in body
    assert 'href="/audit/?outcome=denied&amp;range=7d"' in body
    assert len(_shown(auditor_client.get(response["Location"]))) == 2
    # Someone else sees none of them and cannot delete them.
    assert "Denied this week" not in admin_client.get("/audit/").content.decode()
    assert admin_client.post(f"/audit/views/{view.pk}/delete/").status_code == 404
    assert auditor_client.post(f"/audit/views/{view.pk}/delete/").status_code == 302
    assert not SavedView.objects.filter(owner=audrey).exists()


@pytest.mark.parametrize(
    ("data", "status", "field"),
    [
        ({"name": "  ", "query": "range=7d"}, 400, "/name"),
        ({"name": "x" * 81, "query": "range=7d"}, 400, "/name"),
        ({"name": "Bad", "query": "outcome=blocked"}, 400, "/query"),
        ({"name": "Long", "query": "q=" + "x" * 2000}, 400, "/query"),
        ({"name": "TAKEN", "query": ""}, 409, "/name"),
    ],
)
def test_a_bad_saved_view_is_refused_naming_the_field(
    auditor_client: Client, audrey: User, data: dict[str, str], status: int, field: str
) -> None:
    SavedView.objects.create(owner=audrey, name="taken", query="")
    response = auditor_client.post("/audit/views/", data, HTTP_ACCEPT="application/json")
    assert response.status_code == status
    assert field in response.content.decode()
    assert SavedView.objects.filter(owner=audrey).count() == 1


def test_saved_views_are_bounded_per_user_and_htmx_shows_the_error_in_place(
    auditor_client: Client, audrey: User
) -> None:
    SavedView.objects.bulk_create(
        SavedView(owner=audrey, name=f"v{i}", query="") for i in range(SAVED_VIEWS_PER_USER)
    )
    response = auditor_client.post("/audit/views/", {"name": "one more", "query": ""}, **HTMX)
    body = response.content.decode()
    assert body.lstrip().startswith('<details class="saved-views" id="saved-views"')
    assert f"You already have {SAVED_VIEWS_PER_USER} saved views" in body
    assert 'role="alert"' in body
    assert SavedView.objects.filter(owner=audrey).count() == SAVED_VIEWS_PER_USER


def test_explorer_queries_do_not_grow_with_the_rows(
    auditor_client: Client, sre: Any, django_assert_max_num_queries: Any
) -> None:
    start = timezone.now() - dt.timedelta(hours=1)

    def items(session: str, n: int) -> list[dict[str, Any]]:
        return [
            record_item(
                session_id=session,
                sequence=i,
                point="post_tool_call",
                at=start + dt.timedelta(seconds=i),
                outcome="denied" if i % 3 else "allowed",
                tool_name=f"tool-{i % 7}",
                hooks=(DANGER_HOOK,),
            )
            for i in range(n)
        ]

    store_items(sre.agent, items("sess-few", 3))
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        auditor_client.get("/audit/")
    store_items(sre.agent, items("sess-many", 80))
    with django_assert_max_num_queries(len(few.captured_queries)):
        body = auditor_client.get("/audit/").content.decode()
    assert _total(body) == 83


def test_soft_breaks_escapes_then_lets_an_identifier_wrap_at_its_parts() -> None:
    assert soft_breaks("console:approval_required") == "console:<wbr>approval_required"
    assert soft_breaks("PreToolUse a|b") == "PreToolUse a|<wbr>b"
    assert soft_breaks("<i>x:y</i>") == "&lt;i&gt;x:<wbr>y&lt;/<wbr>i&gt;"
