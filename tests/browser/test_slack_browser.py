"""Real Chromium against a real daphne server: a reviewer's open inbox while Slack clicks
arrive. A wrongly signed click changes nothing; a correctly signed one decides and the row
leaves the inbox live. Then the reviewer decides another call through its signed link."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from approvals import services
from approvals.links import decision_link_token
from approvals.models import Escalation, EscalationStatus
from tests.approvals.conftest import approval_request, ensure_approval_hook
from tests.approvals.live_server import daphne_server
from tests.approvals.test_slack_interactions import SECRET, URL, click_body, slack_headers
from tests.browser.chromium import launch_chromium

SHOTS = Path(os.environ.get("CONSOLE_SCREENSHOTS", "/tmp/console-screenshots"))
NOT_SLACK = "https://example.invalid/response"  # the console posts answers only to Slack


def _signed(body: bytes, secret: str) -> dict[str, str]:
    headers = slack_headers(body, secret=secret)
    return {
        "X-Slack-Request-Timestamp": headers["HTTP_X_SLACK_REQUEST_TIMESTAMP"],
        "X-Slack-Signature": headers["HTTP_X_SLACK_SIGNATURE"],
        "Content-Type": "application/x-www-form-urlencoded",
    }


@pytest.mark.browser
@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_slack_clicks_reach_the_open_inbox_and_the_signed_link_decides(
    rita, alice, sre, monkeypatch
):
    monkeypatch.setenv("CONSOLE_SLACK_SIGNING_SECRET", SECRET)
    ensure_approval_hook(sre)
    services.slack_identity_set(actor=None, user=alice, slack_user_id="U0ALICE001")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with daphne_server() as base:
        agent = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {sre.token}"})
        ids = [
            agent.post(
                "/api/v1/escalations",
                json={"request": approval_request(tool, {"service": "payments"})},
            ).json()["id"]
            for tool in ("restart_service", "scale_deployment")
        ]
        agent.close()
        # Before Playwright: its sync API runs an event loop, where the ORM may not be used.
        link = f"{base}/approvals/link/{decision_link_token(Escalation.objects.get(pk=ids[0]))}/"
        with sync_playwright() as playwright:
            _reviewer_session(playwright, base, ids, link)
    decided = {str(e.pk): e for e in Escalation.objects.filter(pk__in=ids)}
    first, second = decided[ids[0]], decided[ids[1]]
    assert (first.status, first.decided_by_label) == (EscalationStatus.REJECTED, "rita")
    assert first.decision_reason == "not during the freeze"
    assert (second.status, second.decided_by_label) == (EscalationStatus.APPROVED, "alice")


def _reviewer_session(playwright: Any, base: str, ids: list[str], link: str) -> None:
    browser = launch_chromium(playwright)
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(15_000)
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", "pw-rita")
    page.click("button[type=submit]")
    page.goto(f"{base}/approvals/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#nav-pending-count")).to_have_text("2")

    forged = click_body("U0ALICE001", "escalation_approve", ids[0], response_url=NOT_SLACK)
    refused = httpx.post(base + URL, content=forged, headers=_signed(forged, "guessed"))
    assert refused.status_code == 401
    body = click_body("U0ALICE001", "escalation_approve", ids[1], response_url=NOT_SLACK)
    answer = httpx.post(base + URL, content=body, headers=_signed(body, SECRET))
    assert answer.status_code == 200 and "approved by alice" in answer.json()["text"]
    # Pushes arrive in order: once the second row is gone, the first was never touched.
    expect(page.locator(f"#esc-{ids[1]}")).to_have_count(0)
    expect(page.locator(f"#esc-{ids[0]}")).to_be_visible()
    expect(page.locator("#nav-pending-count")).to_have_text("1")

    page.goto(link)
    expect(page.locator("#link-status")).to_have_text("pending")
    expect(page.get_by_text('"payments"')).to_be_visible()
    page.screenshot(path=str(SHOTS / "decision-link-1440.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("#link-approve")).to_be_in_viewport()
    page.screenshot(path=str(SHOTS / "decision-link-390.png"), full_page=True)
    page.fill("input[name=reason]", "not during the freeze")
    page.click("#link-reject")
    expect(page.locator("#link-outcome")).to_contain_text("Rejected by rita")
    expect(page.locator("#link-approve")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "decision-link-decided-390.png"), full_page=True)
    browser.close()
