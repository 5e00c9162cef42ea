"""The record search page /audit/: URL filters, htmx partial, keyset pages, export links."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from demo.records import record_item, store_items
from tests.audit.pages_support import DANGER_HOOK, World

HTMX = {"HTTP_HX_REQUEST": "true"}


def _shown(response: Any) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-record="(\d+)"', response.content.decode())]


def test_all_time_lists_every_record_newest_first(auditor_client: Client, world: World) -> None:
    shown = _shown(auditor_client.get("/audit/?range=all"))
    assert len(shown) == 14
    assert shown[0] == world.record("sess-alpha", 5).pk
    assert shown[-1] == world.record("sess-gamma", 0).pk


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("outcome=denied", {("sess-alpha", 3), ("sess-gamma", 1)}),
        ("outcome=expired", {("sess-beta", 1)}),
        ("outcome=approved", {("sess-alpha", 2)}),
        ("outcome=host_error", {("sess-beta", 4)}),
        ("agent=other-agent&decision=deny", {("sess-gamma", 1)}),
        ("custom_agent=triage&interception_point=agent_shutdown", {("sess-gamma", 3)}),
        ("session_id=sess-beta&interception_point=pre_tool_call", {("sess-beta", 1)}),
        (f"hook={DANGER_HOOK}&mode=enforce", {("sess-alpha", 3)}),
        ("tool_name=restart_service", {("sess-alpha", 2)}),
        ("q=stop_rejected", {("sess-alpha", 4)}),
    ],
)
def test_filters_in_the_url_narrow_the_table(
    auditor_client: Client, world: World, query: str, expected: set[tuple[str, int]]
) -> None:
    shown = set(_shown(auditor_client.get(f"/audit/?{query}&range=all")))
    assert shown == {world.record(session, seq).pk for session, seq in expected}


def test_since_and_until_bound_the_period(auditor_client: Client, world: World) -> None:
    since = (timezone.now() - dt.timedelta(days=2)).isoformat()
    until = (timezone.now() - dt.timedelta(hours=12)).isoformat()
    shown = set(_shown(auditor_client.get("/audit/", {"since": since, "until": until})))
    assert shown == {r.pk for r in world.records["sess-beta"]}


def test_filter_form_shows_the_filters_of_the_url(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/?outcome=denied&tool_name=Bash").content.decode()
    assert '<option value="denied" selected>' in body
    assert 'name="tool_name" id="f-tool_name" value="Bash"' in body
    assert "Approved by reviewer" in body  # human outcome labels


def test_a_bad_filter_value_is_named_and_answered_400(auditor_client: Client, world: World) -> None:
    response = auditor_client.get("/audit/?outcome=blocked")
    assert response.status_code == 400
    assert "Filter <strong>outcome</strong>" in response.content.decode()
    assert _shown(response) == []


def test_htmx_request_gets_only_the_results_partial_and_a_clean_push_url(
    auditor_client: Client, world: World
) -> None:
    response = auditor_client.get("/audit/?outcome=denied&agent=&tool_name=&range=all", **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="results"')
    # Not the page nor its filter form (the saved-views forms are part of the results).
    assert "<html" not in body and "data-explorer-form" not in body
    assert len(_shown(response)) == 2
    assert response["HX-Push-Url"] == "/audit/?outcome=denied&range=all"


def test_history_restore_gets_the_whole_page_and_responses_vary_on_htmx(
    auditor_client: Client, world: World
) -> None:
    restore = auditor_client.get(
        "/audit/?outcome=denied&range=all",
        HTTP_HX_REQUEST="true",
        HTTP_HX_HISTORY_RESTORE_REQUEST="true",
    )
    assert "<html" in restore.content.decode()
    assert len(_shown(restore)) == 2
    for response in (restore, auditor_client.get("/audit/", **HTMX)):
        assert "HX-Request" in response["Vary"]
    assert 'id="results" class="results" hx-history="false"' in restore.content.decode()


def test_full_page_links_have_real_hrefs_for_every_hx_get(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/?limit=3").content.decode()
    for tag in re.findall(r"<a [^>]*hx-get=[^>]*>", body):
        href = re.search(r'href="([^"]+)"', tag)
        hx = re.search(r'hx-get="([^"]+)"', tag)
        assert href and hx and href.group(1) == hx.group(1), tag


def test_older_link_walks_keyset_pages_without_repeats(
    auditor_client: Client, world: World
) -> None:
    seen: list[int] = []
    url = "/audit/?limit=4&agent=sre-agent&range=all"
    pages = 0
    while url:
        response = auditor_client.get(url.replace("&amp;", "&"))
        seen += _shown(response)
        pages += 1
        found = re.search(r'rel="next" href="([^"]+)"', response.content.decode())
        url = found.group(1) if found else ""
        if found:
            assert parse_qs(urlsplit(url.replace("&amp;", "&")).query)["agent"] == ["sre-agent"]
    assert pages == 3
    assert len(seen) == len(set(seen)) == 10


def test_export_buttons_carry_the_same_filters(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/?outcome=denied&agent=sre-agent&cursor=").content.decode()
    links = re.findall(r'data-export="(\w+)" href="([^"]+)"', body)
    assert [fmt for fmt, _ in links] == ["csv", "jsonl"]
    for fmt, href in links:
        parts = urlsplit(href.replace("&amp;", "&"))
        assert parts.path == "/api/v1/records/export"
        # The page's default period travels with the export: it exports what is shown.
        assert parse_qs(parts.query) == {
            "format": [fmt],
            "outcome": ["denied"],
            "agent": ["sre-agent"],
            "range": ["24h"],
        }
    assert "audit-export.js" in body


def test_export_link_downloads_with_the_session_login(auditor_client: Client, world: World) -> None:
    response = auditor_client.get("/api/v1/records/export?format=jsonl&outcome=denied")
    assert response.status_code == 200
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [row["outcome"] for row in lines] == ["denied", "denied"]


def test_evaluate_only_records_are_marked_not_enforced(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/?agent=other-agent&range=all").content.decode()
    assert body.count("evaluate only — not enforced") == 4
    enforced = auditor_client.get("/audit/?agent=sre-agent").content.decode()
    assert "evaluate only — not enforced" not in enforced


def test_expired_is_never_labelled_a_rejection(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/?outcome=expired").content.decode()
    row = body[body.index('data-record="') :]
    assert '<span class="badge expired"' in row
    assert "Approval expired" in row
    assert "Rejected" not in row.split("</tr>")[0]


def test_search_page_queries_do_not_grow_with_the_rows(
    auditor_client: Client, sre: Any, django_assert_max_num_queries: Any
) -> None:
    start = timezone.now() - dt.timedelta(hours=1)
    store_items(
        sre.agent,
        [
            record_item(
                session_id="sess-many",
                sequence=i,
                point="post_tool_call",
                at=start + dt.timedelta(seconds=i),
                outcome="denied" if i % 3 else "allowed",
                tool_name="Bash",
                hooks=(DANGER_HOOK,),
            )
            for i in range(60)
        ],
    )
    with CaptureQueriesContext(connection) as few:
        assert len(_shown(auditor_client.get("/audit/?limit=2"))) == 2
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(_shown(auditor_client.get("/audit/?limit=50"))) == 50
    # The page, the histogram, six facets, saved views, the hooks the rows name (and, for a
    # hook no longer configured, its last name from the history): a fixed number.
    assert len(few.captured_queries) <= 17
