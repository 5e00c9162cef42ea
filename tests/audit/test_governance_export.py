"""GET /api/v1/governance-events/export: the events the events search shows for the same
filter, as RFC 4180 CSV (formula-safe cells) or JSON Lines, streamed; auditors and admins
only; the export is itself a governance event; the events page links to it."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import connections
from django.test import AsyncClient, Client

from agents import services as agent_services
from console.governance.models import GovernanceEvent
from console.governance.services import governance_event_record

URL = "/api/v1/governance-events/export"
pytestmark = pytest.mark.django_db


@pytest.fixture
def events(sre: Any, other: Any, alice: User) -> dict[str, GovernanceEvent]:
    agent_services.agent_set_mode(actor=alice, agent=other.agent, mode="evaluate_only")
    return {
        "mode": GovernanceEvent.objects.get(action="agent.mode_changed"),
        "formula": governance_event_record(
            actor=alice,
            action="records.purged",
            summary='=HYPERLINK("http://evil.example","x")',
            agent=sre.agent,
            after={"note": "-2+3"},
        ),
    }


def _body(response: Any) -> str:
    assert response.status_code == 200, getattr(response, "content", b"")[:300]
    return b"".join(response.streaming_content).decode()


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_csv_is_rfc_4180_with_the_header_first(auditor_client: Client, events: Any) -> None:
    response = auditor_client.get(URL, {"format": "csv", "agent": "other-agent"})

    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="governance-events-' in response["Content-Disposition"]
    text = _body(response)
    assert text.startswith("id,at,action,actor,agent,object_type,object_id,summary,")
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    rows = _csv_rows(text)
    mode = events["mode"]
    assert [row["id"] for row in rows] == [
        str(pk)
        for pk in GovernanceEvent.objects.filter(agent_slug="other-agent")
        .order_by("at", "id")
        .values_list("pk", flat=True)
    ]
    row = next(row for row in rows if row["id"] == str(mode.pk))
    assert (row["action"], row["actor"], row["agent"]) == (
        "agent.mode_changed",
        "alice",
        "other-agent",
    )
    assert json.loads(row["changes"]) == mode.changes
    assert json.loads(row["changes"])["settings"][0]["after"] == "evaluate_only"


def test_csv_cells_that_start_like_a_formula_get_a_quote(
    auditor_client: Client, events: Any
) -> None:
    rows = _csv_rows(_body(auditor_client.get(URL, {"format": "csv", "action": "records.purged"})))

    [row] = rows
    assert row["summary"] == '\'=HYPERLINK("http://evil.example","x")'
    assert row["changes"] == ""  # null is an empty cell
    assert json.loads(row["after"]) == {"note": "-2+3"}


def test_jsonl_has_one_raw_event_per_line(auditor_client: Client, events: Any) -> None:
    response = auditor_client.get(URL, {"format": "jsonl", "action": "records.purged"})

    assert response["Content-Type"] == "application/x-ndjson"
    [line] = _body(response).splitlines()
    item = json.loads(line)
    assert item["summary"] == '=HYPERLINK("http://evil.example","x")'  # raw in JSON
    assert item["id"] == events["formula"].pk and item["agent"] == "sre-agent"
    assert item["at"].endswith("Z")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"action": "records."}, {"formula"}),
        ({"action": "agent.mode_changed", "actor": "alice"}, {"mode"}),
        ({"q": "hyperlink"}, {"formula"}),
        ({"actor": "nobody"}, set()),
    ],
)
def test_the_filters_mean_what_the_events_search_means(
    auditor_client: Client, events: Any, query: dict[str, str], expected: set[str]
) -> None:
    text = _body(auditor_client.get(URL, {"format": "jsonl", **query}))

    ids = {json.loads(line)["id"] for line in text.splitlines()}
    assert ids == {events[name].pk for name in expected}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"format": "xlsx"}, "/format"),
        ({"until": "yesterday"}, "/until"),
        ({"outcome": "x"}, "/outcome"),
    ],
)
def test_a_bad_filter_is_refused_naming_it_and_nothing_is_logged(
    auditor_client: Client, events: Any, query: dict[str, str], field: str
) -> None:
    before = GovernanceEvent.objects.count()
    response = auditor_client.get(URL, query)

    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert GovernanceEvent.objects.count() == before


def test_the_export_is_a_governance_event(auditor_client: Client, events: Any) -> None:
    _body(auditor_client.get(URL, {"format": "csv", "agent": "sre-agent"}))

    event = GovernanceEvent.objects.filter(action="governance.exported").get()
    assert event.actor_label == "audrey"
    assert event.after == {"filter": {"agent": "sre-agent"}, "format": "csv"}


@pytest.mark.parametrize(
    ("client_name", "status"),
    [
        ("admin_client", 200),
        ("auditor_client", 200),
        ("reviewer_client", 403),
        ("outsider_client", 403),
    ],
)
def test_only_auditors_and_admins_export(
    request: pytest.FixtureRequest, events: Any, client_name: str, status: int
) -> None:
    client = request.getfixturevalue(client_name)
    assert client.get(URL, {"format": "jsonl"}).status_code == status


def test_anonymous_and_agent_tokens_are_refused(client: Client, sre: Any, events: Any) -> None:
    assert client.get(URL).status_code in (401, 403)
    assert client.get(URL, **sre.headers()).status_code == 403


def test_the_stream_pages_through_more_events_than_one_fetch(
    auditor_client: Client, sre: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("audit.governance_export.ROWS_PER_FETCH", 2)
    for n in range(5):
        governance_event_record(actor=None, action="records.purged", summary=f"purge {n}")

    text = _body(auditor_client.get(URL, {"format": "jsonl", "q": "purge "}))

    assert [json.loads(line)["summary"] for line in text.splitlines()] == [
        f"purge {n}" for n in range(5)
    ]


@pytest.mark.django_db(transaction=True)
def test_under_asgi_the_body_is_an_async_stream(audrey: User, events: Any) -> None:
    async def fetch() -> tuple[bool, str]:
        client = AsyncClient()
        await client.aforce_login(audrey)
        response = await client.get(URL, {"format": "jsonl", "action": "records.purged"})
        chunks = [chunk async for chunk in response.streaming_content]
        await sync_to_async(connections.close_all)()
        return response.is_async, b"".join(chunks).decode()

    is_async, text = asyncio.run(fetch())

    assert is_async
    assert json.loads(text)["id"] == events["formula"].pk


def test_the_events_page_links_the_export_of_its_filter(
    auditor_client: Client, events: Any
) -> None:
    body = auditor_client.get("/audit/events/?agent=sre-agent&cursor=").content.decode()

    assert 'href="/api/v1/governance-events/export?format=csv&amp;agent=sre-agent"' in body
    assert 'href="/api/v1/governance-events/export?format=jsonl&amp;agent=sre-agent"' in body


def test_the_openapi_schema_lists_the_export(auditor_client: Client) -> None:
    schema = auditor_client.get("/api/schema/?format=json").json()

    operation = schema["paths"][URL]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"action", "actor", "agent", "q", "since", "until", "format"} <= names
    assert {"text/csv", "application/x-ndjson"} <= set(operation["responses"]["200"]["content"])
