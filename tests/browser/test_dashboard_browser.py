"""Real Chromium: the audit dashboard at desktop (1440 px) and phone (390 px) widths; a
tile's link opens the record search listing exactly the records the tile counts.
Screenshots go to /tmp/shots-dash/ (looked at by hand, never compared)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from audit.chain import chain_seal_all
from tests.audit.pages_support import build_world
from tests.browser.chromium import launch_chromium, log_in, open_page

SHOTS = Path("/tmp/shots-dash")


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_dashboard_tiles_link_to_their_records_at_both_widths(
    live_server, audrey, rita, sre, other
):
    build_world(sre, other, reviewer=rita)
    chain_seal_all()
    base = live_server.url
    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page, errors = open_page(browser)
        log_in(page, base, "audrey", landing="/audit/")

        page.goto(f"{base}/audit/dashboard/?range=7d")
        expect(page.locator(".chart-wide svg").first).to_be_visible()
        page.screenshot(path=str(SHOTS / "dashboard-1440.png"), full_page=True)
        blocked = int(page.locator("#tile-blocked .tile-num").inner_text())
        assert blocked == 3
        page.click("#tile-blocked")
        page.wait_for_url(re.compile(r"/audit/\?.*outcome=denied%2Crejected%2Cexpired"))
        expect(page.locator("tr[data-record]")).to_have_count(blocked)
        expect(page.locator("#f-outcome")).to_have_value("denied,rejected,expired")

        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{base}/audit/dashboard/?range=24h")
        expect(page.locator(".chart-narrow svg").first).to_be_visible()
        expect(page.locator(".chart-wide svg").first).to_be_hidden()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the phone layout scrolls sideways ({width} px)"
        page.screenshot(path=str(SHOTS / "dashboard-390.png"), full_page=True)
        assert errors == []
        browser.close()
