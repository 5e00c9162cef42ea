"""Datetimes at the ends of the calendar (and forged keyset cursors) are a 400 naming the
parameter on every audit entry point: the records API, the export, and the /audit/ pages
(as a form error). Their UTC value leaves Python's years 1-9999, so no query can use them."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
from django.test import Client

from audit.selectors import decode_cursor, encode_cursor, parse_instant
from console.errors import InvalidInput
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import tool_items

pytestmark = pytest.mark.django_db

LOW = "0001-01-01T00:00:00+14:00"  # 0000-12-31T10:00Z
HIGH = "9999-12-31T23:59:59-14:00"  # 10000-01-01T13:59:59Z


def forged(at: str, pk: int | str) -> str:
    return base64.urlsafe_b64encode(f"{at}|{pk}".encode()).decode().rstrip("=")


BAD = [
    ({"since": LOW}, "since"),
    ({"until": HIGH}, "until"),
    ({"since": LOW, "until": HIGH}, "since"),
    ({"since": "2026-01-01", "until": HIGH}, "until"),
]
BAD_CURSORS = [
    forged(LOW, 5),
    forged(HIGH, 5),
    forged("2026-01-01T00:00:00+00:00", 2**63),
    forged("2026-01-01T00:00:00+00:00", 0),
    forged("2026-01-01T00:00:00+00:00", "9" * 5000),
]


@pytest.fixture
def stored(client: Client, sre: Any) -> None:
    response = client.post(
        "/api/v1/records",
        data=tool_items(["ls", "rm"]),
        content_type="application/json",
        **sre.headers(),
    )
    assert response.status_code == 202


@pytest.mark.parametrize(("params", "name"), BAD)
@pytest.mark.parametrize("url", ["/api/v1/records", "/api/v1/records/export"])
def test_api_answers_400_naming_the_out_of_range_datetime(
    auditor_client: Client, stored: None, url: str, params: dict[str, str], name: str
) -> None:
    response = auditor_client.get(url, params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert list(error["fields"]) == [f"/{name}"]
    assert "out of range" in error["fields"][f"/{name}"][0]
    assert not GovernanceEvent.objects.filter(action="records.exported").exists()


@pytest.mark.parametrize("cursor", BAD_CURSORS)
def test_api_answers_400_for_a_forged_cursor(
    auditor_client: Client, stored: None, cursor: str
) -> None:
    response = auditor_client.get("/api/v1/records", {"cursor": cursor})
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/cursor"]


@pytest.mark.parametrize(("params", "name"), BAD)
@pytest.mark.parametrize("page", ["/audit/", "/audit/sessions/", "/audit/events/"])
def test_pages_show_a_form_error_naming_the_out_of_range_datetime(
    auditor_client: Client, stored: None, page: str, params: dict[str, str], name: str
) -> None:
    response = auditor_client.get(page, params)
    assert response.status_code == 400
    body = response.content.decode()
    assert f"Filter <strong>{name}</strong>" in body and "out of range" in body


@pytest.mark.parametrize("cursor", BAD_CURSORS)
@pytest.mark.parametrize("page", ["/audit/", "/audit/events/"])
def test_pages_refuse_a_forged_cursor(
    auditor_client: Client, stored: None, page: str, cursor: str
) -> None:
    response = auditor_client.get(page, {"cursor": cursor})
    assert response.status_code == 400
    assert "Filter <strong>cursor</strong>" in response.content.decode()


def test_filter_datetimes_are_compared_and_queried_in_utc() -> None:
    parsed = parse_instant("since", "2026-03-01T09:30:00+14:00")
    assert parsed == dt.datetime(2026, 2, 28, 19, 30, tzinfo=dt.UTC)
    assert parsed.tzinfo is dt.UTC
    assert parse_instant("until", "9999-12-31T23:59:59Z").year == 9999
    with pytest.raises(InvalidInput) as caught:
        parse_instant("until", HIGH)
    assert list(caught.value.fields) == ["/until"]


def test_issued_cursors_still_decode() -> None:
    at = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    assert decode_cursor(encode_cursor(at, 42)) == (at, 42)
