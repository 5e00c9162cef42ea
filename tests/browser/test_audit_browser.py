"""Real Chromium: an auditor narrows the record search to denied calls (the table updates
in place and the URL follows), opens a record, its session timeline, and exports the
filtered records with the streamed progress line, checked against the export's manifest."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Route, expect, sync_playwright

from tests.audit.pages_support import build_world
from tests.browser.chromium import launch_chromium


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_auditor_filters_denied_opens_a_record_and_its_session(
    live_server, audrey, rita, sre, other
):
    world = build_world(sre, other, reviewer=rita)
    denied_sre = world.record("sess-alpha", 3)
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(accept_downloads=True)
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "audrey")
        page.fill("#id_password", "pw-audrey")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/audit/")
        # The explorer opens on the last 24 hours; the world spans three days.
        page.select_option("#f-range", "all")
        expect(page.locator("tr[data-record]")).to_have_count(14)

        page.evaluate("window.__sameDocument = true")
        page.select_option("#f-outcome", "denied")
        expect(page.locator("tr[data-record]")).to_have_count(2)
        page.wait_for_url(re.compile(r"/audit/\?outcome=denied&range=all$"))
        assert page.evaluate("window.__sameDocument === true"), "the page reloaded"
        expect(page.locator("tr[data-record] .badge.denied")).to_have_count(2)
        expect(page.locator("tr[data-record] .eval-tag")).to_have_count(1)

        with page.expect_download() as download_info:
            page.click("a[data-export=jsonl]")
        status = page.locator("[data-export-status]")
        expect(status).to_contain_text("Saved")
        expect(status).to_contain_text("2 rows")
        expect(status).to_contain_text("complete, SHA-256 verified")
        lines = [json.loads(x) for x in download_info.value.path().read_text().splitlines()]
        assert [row["outcome"] for row in lines] == ["denied", "denied"]

        # A download cut short on the way (a proxy dropped the last row) is detected
        # through the manifest and not saved.
        def cut_short(route: Route) -> None:
            answer = route.fetch()
            body = answer.body()
            route.fulfill(response=answer, body=body[: body.rindex(b"\r\n", 0, -2) + 2])

        page.route(re.compile(r"/api/v1/records/export\?"), cut_short)
        saved: list[object] = []
        page.on("download", lambda download: saved.append(download))
        page.click("a[data-export=csv]")
        expect(status).to_contain_text("Not saved: the download was cut short")
        assert status.get_attribute("data-state") == "error"
        assert saved == []
        page.unroute(re.compile(r"/api/v1/records/export\?"))

        page.click(f"tr[data-record='{denied_sre.pk}'] td:first-child a")
        page.wait_for_url(f"{base}/audit/records/{denied_sre.pk}/")
        expect(page.locator(".facts").first).to_contain_text("console:hook_blocked")
        expect(page.locator(".facts").first).to_contain_text("sess-alpha")

        page.get_by_role("link", name="Session timeline →").click()
        page.wait_for_url(re.compile(r"/audit/sessions/sess-alpha/\?agent=sre-agent"))
        items = page.locator(".timeline > li")
        expect(items).to_have_count(7)
        expect(items.nth(3)).to_contain_text("Approval request")
        expect(page.locator("#seq-3")).to_contain_text("Denied")

        # Back through the history: the filtered list, then the unfiltered one (an htmx
        # history restore, which must bring back the whole page, not a bare partial).
        page.go_back()
        page.go_back()
        page.wait_for_url(re.compile(r"/audit/\?outcome=denied&range=all$"))
        expect(page.locator("tr[data-record]")).to_have_count(2)
        page.go_back()
        page.wait_for_url(f"{base}/audit/?range=all")
        expect(page.locator("tr[data-record]")).to_have_count(14)
        expect(page.locator("form.filters")).to_have_count(1)
        browser.close()
    assert errors == []


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_admin_follows_a_record_rows_deciding_hook_to_its_page(live_server, alice, sre):
    """A record row names its deciding hook (description as a tooltip), shows the reason
    the hook was opted in to record, and its name opens the hook's own page."""
    import datetime as dt

    from django.utils import timezone

    from agents import services as agent_services
    from demo.records import record_item, store_items

    hook, _ = agent_services.hook_create(
        actor=alice,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw={
            "name": "restart guard",
            "description": "Only restart off-hours.",
            "type": "command",
            "matcher": "restart_service",
            "command": "exit 0",
            "recordReason": True,
        },
    )
    item = record_item(
        session_id="s-browser",
        sequence=1,
        point="pre_tool_call",
        at=timezone.now() - dt.timedelta(minutes=1),
        outcome="denied",
        tool_name="restart_service",
        hooks=(hook.key,),
        message="restarts wait for Monday",
    )
    store_items(sre.agent, [item])
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alice")
        page.click("button[type=submit]")
        page.goto(f"{base}/audit/")
        row = page.locator("tr[data-record]").first
        link = row.locator(".decided-by a.hook-ref")
        expect(link).to_have_text("restart guard")
        expect(link).to_have_attribute("title", re.compile("Only restart off-hours"))
        expect(row.locator(".recorded-reason")).to_contain_text(
            "recorded reason (opted in by alice)"
        )
        expect(row.locator(".recorded-reason")).to_contain_text("restarts wait for Monday")
        page.set_viewport_size({"width": 1400, "height": 700})
        page.screenshot(path="/tmp/shots-why/record-row-hook.png", full_page=True)
        link.click()
        page.wait_for_url(f"{base}/agents/sre-agent/hooks/{hook.key}/overview/")
        expect(page.locator("#main, main").first).to_contain_text("restart guard")
        expect(page.locator("dl.facts").first).to_contain_text("opted in by alice")
        page.screenshot(path="/tmp/shots-why/hook-overview.png", full_page=True)
        browser.close()
