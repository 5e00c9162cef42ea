"""Real Chromium: an auditor opens a hook edit's before/after on the governance events page,
then runs "Verify chain" from the audit header and reads the result."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from playwright.sync_api import expect, sync_playwright

from agents import services
from audit.chain import chain_seal
from audit.models import InterceptionRecord, RecordSeal
from console.celery import app as celery_app
from tests.audit.record_wires import items, sdk_session
from tests.browser.chromium import launch_chromium, log_in, open_page

# Set to a directory to keep screenshots of the pages at desktop and phone sizes.
SHOTS = os.environ.get("CONSOLE_TEST_SHOTS", "")


def _changes(sre: Any, alice: Any) -> None:
    hook, _ = services.hook_create(
        actor=alice,
        agent=sre.agent,
        custom_agent=None,
        event="Stop",
        raw={"type": "prompt", "prompt": "Is the task complete?\nAnswer yes or no.\n"},
    )
    services.hook_update(
        actor=alice,
        hook=hook,
        raw={
            "type": "prompt",
            "prompt": "Is the task complete?\nAnswer yes, no or unsure.\n",
            "timeout": 45,
        },
    )


def _records(client: Any, sre: Any) -> None:
    body = json.dumps(items(sdk_session(["ls", "rm"]), tool_name="t"))
    response = client.post(
        "/api/v1/records", data=body, content_type="application/json", **sre.headers()
    )
    assert response.status_code == 202
    chain_seal(sre.agent.pk)


def _tamper_first(sre: Any) -> int:
    try:
        first = RecordSeal.objects.filter(agent=sre.agent).order_by("chain_seq").first()
        assert first is not None
        InterceptionRecord.objects.filter(pk=first.record_id).update(reason="edited")
        return first.record_id
    finally:
        connection.close()


def _shot(page: Any, name: str) -> None:
    if not SHOTS:
        return
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})


@pytest.fixture
def eager() -> Any:
    """The embedded default runs tasks inline; the test settings have a broker instead."""
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_auditor_reads_a_hook_change_and_verifies_the_chain(
    live_server: Any, eager: Any, client: Any, audrey: Any, alice: Any, sre: Any
) -> None:
    _changes(sre, alice)
    _records(client, sre)
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page, errors = open_page(browser)
        log_in(page, base, "audrey", landing="/audit/")

        page.goto(f"{base}/audit/events/?agent=sre-agent")
        changes = page.locator("details.event-changes").first
        expect(changes.locator("summary")).to_have_text("2 fields changed")
        changes.locator("summary").click()
        expect(changes.locator(".diff .add")).to_have_text("+Answer yes, no or unsure.")
        expect(changes.locator(".diff .del")).to_have_text("-Answer yes or no.")
        expect(changes.locator(".add-cell code")).to_have_text("45")
        _shot(page, "govevents-events")

        page.click(".audit-head .verify-form button")
        page.wait_for_url(f"{base}/audit/verify/*/")
        expect(page.locator("#verification-status")).to_contain_text("Every chain holds")
        expect(page.locator("tr[data-chain=sre-agent]")).to_contain_text("OK")
        _shot(page, "govevents-verify")

        # Playwright's sync API runs a loop in this thread: the ORM goes to another one.
        with ThreadPoolExecutor(1) as pool:
            record_id = pool.submit(_tamper_first, sre).result()
        page.goto(f"{base}/audit/verify/")
        page.select_option("#verify-agent", "sre-agent")
        page.click("form.filters button[type=submit]")
        page.wait_for_url(f"{base}/audit/verify/*/")
        row = page.locator("tr[data-chain=sre-agent]")
        expect(row).to_contain_text("altered")
        row.locator(f'a[href="/audit/records/{record_id}/"]').click()
        page.wait_for_url(f"{base}/audit/records/{record_id}/")
        page.go_back()
        _shot(page, "govevents-verify-broken")
        assert errors == []
        browser.close()
