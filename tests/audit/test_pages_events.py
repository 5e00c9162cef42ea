"""The governance events page /audit/events/."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console.governance.models import GovernanceEvent
from console.governance.services import governance_event_record

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def events(sre: Any, other: Any, alice: User) -> dict[str, GovernanceEvent]:
    return {
        "mode": governance_event_record(
            actor=alice,
            action="agent.mode_changed",
            summary="alice set other-agent to evaluate_only",
            agent=other.agent,
            target=other.agent,
            before={"mode": "enforce", "revision": 1},
            after={"mode": "evaluate_only", "revision": 1},
        ),
        "purge": governance_event_record(
            actor=None,
            action="records.purged",
            summary="Retention purged 1,204 records of sre-agent",
            agent=sre.agent,
        ),
        "export": governance_event_record(
            actor=alice, action="records.exported", summary="alice exported outcome=denied as CSV"
        ),
    }


def _shown(body: bytes) -> set[int]:
    return {int(pk) for pk in re.findall(r'data-event="(\d+)"', body.decode())}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("action=agent.mode_changed", {"mode"}),
        ("action=records.", {"purge", "export"}),
        ("actor=alice", {"mode", "export"}),
        ("actor=system&q=retention", {"purge"}),
        ("agent=other-agent&action=agent.mode_changed", {"mode"}),
        ("actor=alice&q=exported", {"export"}),
    ],
)
def test_filters_narrow_the_events(
    auditor_client: Client, events: dict[str, GovernanceEvent], query: str, expected: set[str]
) -> None:
    shown = _shown(auditor_client.get(f"/audit/events/?{query}").content)
    assert shown == {events[name].pk for name in expected}


def test_agent_filter_keeps_only_that_agents_events(
    auditor_client: Client, events: dict[str, GovernanceEvent]
) -> None:
    shown = _shown(auditor_client.get("/audit/events/?agent=other-agent").content)
    expected = set(
        GovernanceEvent.objects.filter(agent_slug="other-agent").values_list("pk", flat=True)
    )
    assert events["mode"].pk in shown
    assert shown == expected
    assert events["purge"].pk not in shown


def test_before_and_after_are_expandable_with_the_changed_keys(
    auditor_client: Client, events: dict[str, GovernanceEvent]
) -> None:
    body = auditor_client.get("/audit/events/?action=agent.mode_changed").content.decode()
    assert "<details" in body
    assert "1 changed: mode" in body
    assert "&quot;evaluate_only&quot;" in body and "&quot;enforce&quot;" in body


def test_action_filter_offers_each_action_and_each_prefix(
    auditor_client: Client, events: dict[str, GovernanceEvent]
) -> None:
    body = auditor_client.get("/audit/events/").content.decode()
    assert '<option value="records.">records.* (all)</option>' in body
    assert '<option value="agent.mode_changed">agent.mode_changed</option>' in body


def test_htmx_request_gets_only_the_results(
    auditor_client: Client, events: dict[str, GovernanceEvent]
) -> None:
    response = auditor_client.get("/audit/events/?actor=alice&action=", **HTMX)
    assert response.content.decode().lstrip().startswith('<section id="results"')
    assert response["HX-Push-Url"] == "/audit/events/?actor=alice"
    assert _shown(response.content) == {events["mode"].pk, events["export"].pk}


def test_a_bad_date_is_named(auditor_client: Client, events: dict[str, GovernanceEvent]) -> None:
    response = auditor_client.get("/audit/events/?since=yesterday")
    assert response.status_code == 400
    assert "Filter <strong>since</strong>" in response.content.decode()


def test_older_link_pages_through_events(
    auditor_client: Client, events: dict[str, GovernanceEvent]
) -> None:
    total = GovernanceEvent.objects.count()
    seen: list[int] = []
    url = "/audit/events/?limit=2"
    while url:
        body = auditor_client.get(url.replace("&amp;", "&")).content
        seen += sorted(_shown(body), reverse=True)
        found = re.search(r'rel="next" href="([^"]+)"', body.decode())
        url = found.group(1) if found else ""
    assert len(seen) == len(set(seen)) == total
