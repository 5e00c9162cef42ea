"""Real Chromium against a real daphne server: a reviewer sees an escalation arrive live, edits
an argument and approves; the agent's waiting long-poll returns the edited arguments."""

from __future__ import annotations

import json
import re
import threading

import httpx
import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect, sync_playwright

from approvals.models import Escalation, EscalationStatus
from tests.approvals.conftest import (
    TOOL_SCHEMA,
    approval_request,
    ensure_approval_hook,
    in_own_thread,
    resolution_errors,
)
from tests.approvals.live_server import daphne_server
from tests.browser.chromium import launch_chromium


@pytest.mark.browser
@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_reviewer_edits_and_approves_a_live_escalation(rita, sre):
    ensure_approval_hook(sre)
    with daphne_server() as base, sync_playwright() as playwright:
        agent = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {sre.token}"})
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "rita")
        page.fill("#id_password", "pw-rita")
        page.click("button[type=submit]")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        page.evaluate("window.__sameDocument = true")

        # The keyboard path: j selects the newest row, r focuses its reason, Enter rejects.
        first = agent.post(
            "/api/v1/escalations", json={"request": approval_request("restart_service")}
        ).json()["id"]
        expect(page.locator(f"#esc-{first}")).to_be_visible()
        page.keyboard.press("j")
        page.keyboard.press("r")
        expect(page.locator(f"#esc-{first} .reject-reason")).to_be_focused()
        page.keyboard.type("not during the freeze")
        page.keyboard.press("Enter")
        expect(page.locator(f"#esc-{first}")).to_have_count(0)

        created = agent.post(
            "/api/v1/escalations",
            json={
                "request": approval_request("scale_deployment", {"service": "web", "replicas": 8}),
                "meta": {"tool_schema": TOOL_SCHEMA, "transcript": "user: scale web up"},
            },
        )
        assert created.status_code == 201, created.text
        escalation_id = created.json()["id"]
        row = page.locator(f"#esc-{escalation_id}")
        expect(row).to_be_visible()
        expect(row).to_contain_text("scale_deployment")
        expect(page.locator("#nav-pending-count")).to_have_text("1")

        answers: list[httpx.Response] = []
        poller = threading.Thread(
            target=lambda: answers.append(
                agent.get(f"/api/v1/escalations/{escalation_id}", params={"wait": 30}, timeout=40)
            )
        )
        poller.start()

        row.locator("details.edit summary").click()
        row.locator("textarea.args-edit").fill(json.dumps({"service": "web", "replicas": 3}))
        row.get_by_role("button", name="Approve with these arguments").click()
        # Held for the undo window (five seconds), then sent.
        expect(row.locator(".undo-bar")).to_contain_text("with edited arguments")
        expect(row).to_have_count(0, timeout=12_000)
        expect(page.locator("#flash")).to_contain_text("approved with edited arguments")
        expect(page.locator("#nav-pending-count")).to_have_text("")
        assert page.evaluate("window.__sameDocument === true"), "the page reloaded"
        browser.close()

        poller.join(timeout=40)
        agent.close()
    assert answers, "the long-poll did not return"
    body = answers[0].json()
    assert body["status"] == "approved" and body["decided_by"] == "rita"
    assert body["resolution"]["verdict"] == {
        "decision": "transform",
        "transform": {"path": "$target", "value": {"service": "web", "replicas": 3}},
    }
    assert resolution_errors(body["resolution"]) == []
    rejected = Escalation.objects.get(pk=first)
    assert rejected.status == EscalationStatus.REJECTED
    assert rejected.decision_reason == "not during the freeze"
    escalation = Escalation.objects.get(pk=escalation_id)
    assert escalation.status == EscalationStatus.APPROVED and escalation.arguments_edited


@pytest.mark.browser
@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_an_inbox_signed_out_elsewhere_shows_nothing_new_and_goes_to_the_login_page(rita, sre):
    ensure_approval_hook(sre)
    with daphne_server() as base, sync_playwright() as playwright:
        agent = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {sre.token}"})
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "rita")
        page.fill("#id_password", "pw-rita")
        page.click("button[type=submit]")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")

        # Signed out elsewhere (another tab's logout, an admin flushing sessions); from a
        # thread, as Playwright's sync API runs an event loop in this one.
        flush = threading.Thread(target=in_own_thread(lambda: Session.objects.all().delete()))
        flush.start()
        flush.join()
        created = agent.post(
            "/api/v1/escalations",
            json={"request": approval_request("restart_service", {"service": "secret-db"})},
        )
        assert created.status_code == 201, created.text
        expect(page).to_have_url(re.compile(r"/accounts/login/"))
        assert "secret-db" not in page.content()
        browser.close()
        agent.close()
