"""POST /api/v1/records/dead-letters: an agent reports the record batches the console
refused (kept in its dead-letter file); the count and the last refusal show on the
agent's page, and each new report is a governance event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit.models import DeadLetterReport, GovernanceEvent

URL = "/api/v1/records/dead-letters"
pytestmark = pytest.mark.django_db


def report(batch: str = "b1", records: int = 3, **extra: Any) -> dict[str, Any]:
    return {
        "batch": batch,
        "records": records,
        "status": 400,
        "error": "invalid: Item 0 is invalid at /0/record/session_id: must be at most 200 "
        "characters. Nothing of this batch was stored.",
        "refused_at": "2026-11-30T06:51:49.382423+00:00",
        **extra,
    }


def post(client, body: Any, headers: dict[str, str]) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json", **headers)


def test_a_report_is_stored_once_for_the_tokens_agent(client, sre, other):
    first = post(client, [report("b1"), report("b2", records=2)], sre.headers())
    assert first.status_code == 202 and first.json() == {"accepted": 2, "duplicates": 0}
    again = post(client, [report("b2", records=2), report("b3", records=1)], sre.headers())
    assert again.json() == {"accepted": 1, "duplicates": 1}
    stored = DeadLetterReport.objects.filter(agent=sre.agent)
    assert sorted(stored.values_list("batch", "records")) == [("b1", 3), ("b2", 2), ("b3", 1)]
    # The same batch id of another agent is that agent's own report.
    assert post(client, [report("b1")], other.headers()).json()["accepted"] == 1
    events = GovernanceEvent.objects.filter(action="records.dead_lettered", agent=sre.agent)
    assert [event.after["records"] for event in events.order_by("id")] == [5, 1]
    summary = events.order_by("id").first().summary
    assert summary.startswith("sre-agent kept 5 records the console refused (400: invalid:")


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"batch": "../x"}, "/1/batch"),
        ({"records": 0}, "/1/records"),
        ({"records": 10**20}, "/1/records"),
        ({"status": 500}, "/1/status"),
        ({"status": True}, "/1/status"),
        ({"error": "e" * 1001}, "/1/error"),
        ({"error": {"fields": {}}}, "/1/error"),
        ({"refused_at": "yesterday"}, "/1/refused_at"),
        ({"refused_at": "2026-11-30T06:51:49"}, "/1/refused_at"),
        ({"refused_at": "0001-01-01T00:00:00+14:00"}, "/1/refused_at"),
        ({"item": {"record": {}}}, "/1/item"),
    ],
)
def test_a_bad_report_is_refused_by_field_and_nothing_is_stored(client, sre, change, pointer):
    bad = {**report("bad"), **change}
    response = post(client, [report("ok"), bad], sre.headers())
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [pointer]
    assert DeadLetterReport.objects.count() == 0


def test_the_body_is_a_bounded_array(client, sre):
    assert post(client, report(), sre.headers()).status_code == 400
    assert post(client, [], sre.headers()).status_code == 400
    too_many = [report(f"b{i}") for i in range(101)]
    assert post(client, too_many, sre.headers()).status_code == 400


def test_the_agent_page_shows_what_the_console_refused(client, admin_client, sre):
    page = admin_client.get("/agents/sre-agent/")
    assert page.status_code == 200 and b'id="dead-letters"' not in page.content
    post(client, [report("b1", records=3)], sre.headers())
    later = report("b2", records=2, error="invalid: a later refusal")
    later["refused_at"] = "2026-11-30T07:00:00+00:00"
    post(client, [later], sre.headers())
    html = admin_client.get("/agents/sre-agent/").content.decode()
    assert 'id="dead-letters"' in html
    assert "5 interception records refused by the console" in html
    assert "(2 batches)" in html and "records.dead-letter.jsonl" in html
    assert "HTTP 400" in html and "invalid: a later refusal" in html
    assert "2026-11-30 07:00:00 UTC" in html
