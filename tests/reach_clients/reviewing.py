"""What a reviewer and an auditor do over the console's API while a real client waits."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from tests.reach_clients.clients import Started

PENDING_WAIT_SECONDS = 60
RECORDS_WAIT_SECONDS = 20


def wait_for_pending(
    governed: Any, started: Started | None = None, *, timeout: float = PENDING_WAIT_SECONDS
) -> dict[str, Any]:
    """The first pending escalation of the reviewer's list, once the client's call made one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = governed.console.api(
            "GET",
            "/api/v1/escalations",
            token=governed.reviewer_token,
            params={"status": "pending"},
        )
        assert answer.status_code == 200, answer.text
        items: list[dict[str, Any]] = answer.json()["items"]
        if items:
            return items[0]
        if started is not None and started.process.poll() is not None:
            raise AssertionError(f"the client ended before any escalation: {started.wait()}")
        time.sleep(0.2)
    raise AssertionError(f"no escalation appeared in {timeout} s")


def decide(
    governed: Any,
    escalation_id: str,
    outcome: str,
    reason: str,
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"outcome": outcome, "reason": reason}
    if args is not None:
        body["args"] = args
    answer = governed.console.api(
        "POST",
        f"/api/v1/escalations/{escalation_id}/decision",
        token=governed.reviewer_token,
        json=body,
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def exported_records(
    governed: Any, *, session_id: str, expect_points: set[str]
) -> tuple[list[dict[str, Any]], str]:
    """The auditor's JSONL export of the agent's records of one session (and its raw text),
    once the records of every point in `expect_points` have arrived."""
    deadline = time.monotonic() + RECORDS_WAIT_SECONDS
    while True:
        answer = governed.console.api(
            "GET",
            "/api/v1/records/export",
            token=governed.auditor_token,
            params={"format": "jsonl", "agent": governed.agent.slug, "session_id": session_id},
        )
        assert answer.status_code == 200, answer.text
        text = answer.text
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        # One record per line, every line the same shape; the manifest counts them.
        rows = lines
        assert all("interception_point" in row for row in rows), rows[:1]
        manifest = governed.console.api(
            "GET", urlsplit(answer.headers["X-Export-Manifest"]).path, token=governed.auditor_token
        )
        assert manifest.status_code == 200, manifest.text
        assert manifest.json()["rows"] == len(rows), manifest.json()
        points = {row["interception_point"] for row in rows}
        if expect_points <= points or time.monotonic() > deadline:
            return rows, text
        time.sleep(0.3)
