"""Query parameters at their edges on the approvals side: a History day at the end of
the calendar is a form error naming the field (400); the list API answers 400 naming the
parameter for a forged cursor or a limit that is not a small ASCII integer."""

from __future__ import annotations

import base64
import uuid

import pytest


def forged(at: str) -> str:
    return base64.urlsafe_b64encode(f"{at}|{uuid.uuid4()}".encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("params", "zone", "name"),
    [
        ({"until": "9999-12-31"}, "UTC", "until"),  # ends in year 10000
        ({"since": "9999-12-31"}, "UTC", "since"),
        ({"since": "0001-01-01"}, "Asia/Tokyo", "since"),  # east of UTC: starts in year 0
        ({"until": "0001-01-01"}, "Asia/Tokyo", "until"),
    ],
)
def test_history_names_a_day_whose_span_leaves_the_calendar(
    reviewer_client, escalate, settings, params, zone, name
):
    settings.TIME_ZONE = zone
    escalate()
    response = reviewer_client.get("/approvals/history/", params)
    assert response.status_code == 400
    assert list(response.context["form"].errors) == [name]
    body = response.content.decode()
    assert f"{name}: Out of range" in body
    assert "No escalations match" in body


def test_history_accepts_the_last_whole_day_the_calendar_can_hold(reviewer_client, escalate):
    escalate()
    response = reviewer_client.get("/approvals/history/", {"until": "9999-12-30"})
    assert response.status_code == 200
    assert "restart_service" in response.content.decode().split("<tbody>")[1]


@pytest.mark.parametrize(
    "at", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-01-01T00:00:00"]
)
def test_list_api_refuses_a_forged_cursor(reviewer_client, escalate, at):
    escalate()
    response = reviewer_client.get("/api/v1/escalations", {"status": "all", "cursor": forged(at)})
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/cursor"]


@pytest.mark.parametrize("limit", ["9" * 5000, "²", "١٢", "0", "201", "-1"])
def test_list_api_refuses_a_limit_that_is_not_a_small_integer(reviewer_client, limit):
    response = reviewer_client.get("/api/v1/escalations", {"limit": limit})
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/limit"]
