"""GET /api/v1/records: every filter, keyset pagination, permissions."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from agent_hooks import EnforcementMode
from django.test import Client

from tests.audit.record_wires import items, sdk_session, tool_items

URL = "/api/v1/records"
pytestmark = pytest.mark.django_db
OLD = "2026-01-15T10:00:00.000000Z"


def post(client: Client, agent: Any, batch: list[dict[str, Any]]) -> None:
    response = client.post(
        URL, data=json.dumps(batch), content_type="application/json", **agent.headers()
    )
    assert response.status_code == 202, response.content


@pytest.fixture(scope="module")
def batches() -> list[tuple[str, list[dict[str, Any]]]]:
    main = tool_items(["ls", "audit", "rm", "redact", "crash", "deploy"])
    for item in main:
        item["meta"]["custom_agent"] = "triage"
    old = items(sdk_session(["ls"]))
    for item in old:
        item["record"]["timestamp"] = OLD
    return [
        ("sre", main),
        ("sre", tool_items(["deploy"], approval="reject")),
        ("sre", tool_items(["deploy"], approval="expire")),
        ("sre", old),
        ("other", tool_items(["rm", "ls"], mode=EnforcementMode.EVALUATE_ONLY)),
    ]


@pytest.fixture
def data(client, sre, other, batches) -> dict[str, Any]:
    agents = {"sre": sre, "other": other}
    for who, batch in batches:
        post(client, agents[who], batch)
    return {"session": batches[0][1][0]["record"]["session_id"]}


def fetch(client: Client, **params: Any) -> Any:
    return client.get(f"{URL}?{urlencode(params)}")


def everything(client: Client) -> list[dict[str, Any]]:
    body = fetch(client, limit=500).json()
    assert body["next"] is None
    return body["results"]


def verdict(item: dict[str, Any]) -> dict[str, Any]:
    return item["record"]["verdict"]


CASES: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = [
    ("agent", "other-agent", lambda i: i["agent"] == "other-agent"),
    ("custom_agent", "triage", lambda i: i["custom_agent"] == "triage"),
    (
        "interception_point",
        "pre_tool_call",
        lambda i: i["record"]["interception_point"] == "pre_tool_call",
    ),
    ("decision", "deny", lambda i: verdict(i)["decision"] == "deny"),
    ("decision", "transform", lambda i: verdict(i)["decision"] == "transform"),
    (
        "outcome",
        "allowed",
        lambda i: verdict(i) == {"decision": "allow"} and "resolved_by" not in i["record"],
    ),
    ("outcome", "warned", lambda i: bool(verdict(i).get("warnings"))),
    ("outcome", "denied", lambda i: verdict(i).get("reason") == "dangerous_command"),
    ("outcome", "transformed", lambda i: verdict(i)["decision"] == "transform"),
    ("outcome", "approved", lambda i: i["record"].get("resolved_by") == "approval"),
    ("outcome", "rejected", lambda i: verdict(i).get("reason") == "reviewer_rejected"),
    ("outcome", "expired", lambda i: verdict(i).get("reason") == "approval_expired"),
    ("outcome", "host_error", lambda i: str(verdict(i).get("reason")).startswith("host_error:")),
    (
        "hook",
        "hk_audit0002",
        lambda i: "hk_audit0002" in [v.get("name") for v in i["record"]["verdicts"]],
    ),
    ("tool_name", "rm", lambda i: i["tool_name"] == "rm"),
    ("mode", "evaluate_only", lambda i: i["record"]["mode"] == "evaluate_only"),
    ("q", "DANGEROUS", lambda i: "dangerous" in str(verdict(i).get("reason") or "")),
    ("since", "2026-02-01", lambda i: i["record"]["timestamp"] != OLD),
    ("until", "2026-02-01T00:00:00Z", lambda i: i["record"]["timestamp"] == OLD),
]


@pytest.mark.parametrize(
    ("name", "value", "predicate"), CASES, ids=[f"{c[0]}={c[1]}" for c in CASES]
)
def test_each_filter_returns_exactly_the_matching_records(
    auditor_client, data, name, value, predicate
):
    all_items = everything(auditor_client)
    expected = {item["id"] for item in all_items if predicate(item)}
    assert 0 < len(expected) < len(all_items)
    body = fetch(auditor_client, **{name: value}, limit=500).json()
    assert {item["id"] for item in body["results"]} == expected


def test_session_filter_returns_that_session(auditor_client, data):
    results = fetch(auditor_client, session_id=data["session"], limit=500).json()["results"]
    assert sorted(item["sequence"] for item in results) == list(range(10))


def test_filters_combine(auditor_client, data):
    results = fetch(auditor_client, agent="sre-agent", outcome="denied").json()["results"]
    assert [item["tool_name"] for item in results] == ["rm"]


def test_results_are_newest_first_with_the_tamper_fields(auditor_client, data):
    results = everything(auditor_client)
    keys = [(item["timestamp"], item["id"]) for item in results]
    assert keys == sorted(keys, reverse=True)
    assert {"chain_seq", "chain_hash", "chain_prev", "record", "hook_ids"} <= set(results[0])


@pytest.mark.parametrize(
    ("params", "pointer"),
    [
        ({"since": "last tuesday"}, "/since"),
        ({"until": "2026-13-01"}, "/until"),
        ({"decision": "maybe"}, "/decision"),
        ({"outcome": "blocked"}, "/outcome"),
        ({"interception_point": "pre_everything"}, "/interception_point"),
        ({"mode": "relaxed"}, "/mode"),
        ({"limit": "501"}, "/limit"),
        ({"limit": "ten"}, "/limit"),
        ({"cursor": "not-a-cursor"}, "/cursor"),
        ({"agnet": "sre-agent"}, "/agnet"),
        ({"since": "2026-03-01", "until": "2026-02-01"}, "/until"),
    ],
)
def test_bad_filter_values_are_400_naming_the_filter(auditor_client, data, params, pointer):
    response = fetch(auditor_client, **params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert list(error["fields"]) == [pointer]
    assert pointer[1:] in error["message"]


def test_keyset_pages_have_no_duplicates_or_gaps_while_records_arrive(
    client, auditor_client, sre, data
):
    before = [item["id"] for item in everything(auditor_client)]
    seen: list[int] = []
    url: str | None = f"{URL}?limit=7"
    pages = 0
    while url:
        body = auditor_client.get(url).json()
        seen += [item["id"] for item in body["results"]]
        url = body["next"]
        pages += 1
        if pages in (1, 3):
            post(client, sre, tool_items(["ls", "rm"]))
    assert len(seen) == len(set(seen))
    assert seen == before
    assert pages == -(-len(before) // 7)


def test_next_link_keeps_the_filters(auditor_client, data):
    body = fetch(auditor_client, agent="sre-agent", limit=3).json()
    assert "agent=sre-agent" in body["next"] and "limit=3" in body["next"]
    second = Client.get(auditor_client, body["next"]).json()
    assert all(item["agent"] == "sre-agent" for item in second["results"])


def test_a_page_costs_a_constant_number_of_queries(
    auditor_client, data, django_assert_max_num_queries
):
    with django_assert_max_num_queries(6):
        assert len(fetch(auditor_client, limit=200).json()["results"]) > 20


def test_admins_read_records(admin_client, data):
    assert fetch(admin_client).status_code == 200


@pytest.mark.parametrize("who", ["reviewer_client", "outsider_client"])
def test_reviewers_and_people_without_a_role_may_not_read(request, who, data):
    assert fetch(request.getfixturevalue(who)).status_code == 403


def test_agent_tokens_may_not_read_records(client, sre, data):
    assert client.get(URL, **sre.headers()).status_code == 403


def test_anonymous_may_not_read(client, data):
    assert client.get(URL).status_code in (401, 403)


def test_timestamps_are_utc_with_microseconds(auditor_client, data):
    item = fetch(auditor_client, until="2026-02-01").json()["results"][0]
    assert item["timestamp"] == OLD
    assert dt.datetime.fromisoformat(item["received_at"]).tzinfo is not None
