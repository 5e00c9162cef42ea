"""Real Chromium: the record explorer. An auditor reads the histogram, narrows by a facet
(in place, the URL follows, a chip takes it off again), opens one bar's period, saves the
filter as a view and opens it again; the page at 1440 and 390 px wide (screenshots in
/tmp/shots-explorer/, never in the repository)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from audit.models import SavedView
from tests.audit.pages_support import build_world
from tests.browser.chromium import launch_chromium, log_in, open_page

SHOTS = Path("/tmp/shots-explorer")


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_auditor_explores_records_with_histogram_facets_and_a_saved_view(
    live_server, audrey, rita, sre, other
):
    build_world(sre, other, reviewer=rita)
    base = live_server.url
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page, errors = open_page(browser, 1440, 1000)
        log_in(page, base, "audrey", landing="/audit/")
        expect(page.locator("#f-range")).to_have_value("24h")

        page.select_option("#f-range", "7d")
        page.wait_for_url(re.compile(r"/audit/\?range=7d$"))
        bars = page.locator("figure.histogram a.hist-link")
        expect(bars).to_have_count(85)
        expect(page.locator("[data-total]")).to_have_attribute("data-total", "14")
        expect(page.locator("tr[data-record]")).to_have_count(14)
        assert (
            sum(
                int(v)
                for v in page.locator("figure.histogram rect.bar").evaluate_all(
                    "bars => bars.map(b => b.dataset.value)"
                )
            )
            == 14
        )
        page.screenshot(path=str(SHOTS / "explorer-1440.png"), full_page=True)

        # A facet narrows in place and the URL follows; its chip takes it off again.
        page.evaluate("window.__sameDocument = true")
        page.locator("[data-facet=outcome] a[data-value=denied]").click()
        page.wait_for_url(re.compile(r"/audit/\?outcome=denied&range=7d$"))
        expect(page.locator("tr[data-record]")).to_have_count(2)
        expect(page.locator("[data-total]")).to_have_attribute("data-total", "2")
        expect(page.locator("[data-facet=outcome] a.active")).to_have_attribute(
            "data-value", "denied"
        )
        expect(page.locator("#f-outcome")).to_have_value("denied")  # the form follows
        expect(page.locator("[data-facet=agent] a.facet-value")).to_have_count(2)
        chip = page.locator("a[data-chip=outcome]")
        expect(chip).to_contain_text("denied")
        chip.click()
        page.wait_for_url(re.compile(r"/audit/\?range=7d$"))
        expect(page.locator("tr[data-record]")).to_have_count(14)
        expect(page.locator("#f-outcome")).to_have_value("")
        assert page.evaluate("window.__sameDocument === true"), "the page reloaded"

        # A bar opens its own period (absolute since/until).
        page.locator('figure.histogram a.hist-link[aria-label$=": 6 records"]').click()
        page.wait_for_url(re.compile(r"/audit/\?since=[^&]+&until=[^&]+$"))
        expect(page.locator("tr[data-record]")).to_have_count(6)
        expect(page.locator("#f-range")).to_have_value("")

        # Save a filter as a view, then open it from the list.
        page.goto(f"{base}/audit/?range=7d&outcome=denied")
        page.locator("details[data-saved-views] > summary").click()
        page.fill("#saved-view-name", "Denied this week")
        page.get_by_role("button", name="Save view").click()
        expect(page.locator("[data-saved-view='Denied this week']")).to_be_visible()
        expect(page.locator("[data-saved-view='Denied this week'] a")).to_have_attribute(
            "href", "/audit/?outcome=denied&range=7d"
        )
        page.goto(f"{base}/audit/")
        page.locator("details[data-saved-views] > summary").click()
        page.locator("[data-saved-view='Denied this week'] a").click()
        page.wait_for_url(re.compile(r"/audit/\?outcome=denied&range=7d$"))
        expect(page.locator("tr[data-record]")).to_have_count(2)
        expect(page.locator("#f-range")).to_have_value("7d")

        # 390 px: the facets start folded above the results, nothing overflows sideways.
        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.context.add_cookies(page.context.cookies())
        phone.on("pageerror", lambda exc: errors.append(str(exc)))
        phone.goto(f"{base}/audit/?range=7d")
        expect(phone.locator("figure.histogram a.hist-link")).to_have_count(85)
        expect(phone.locator("details[data-facets]")).not_to_have_attribute("open", "")
        assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        phone.screenshot(path=str(SHOTS / "explorer-390.png"), full_page=True)
        phone.locator("details[data-facets] > summary").click()
        phone.locator("[data-facet=outcome] a[data-value=denied]").click()
        phone.wait_for_url(re.compile(r"outcome=denied"))
        expect(phone.locator("tr[data-record]")).to_have_count(2)
        phone.screenshot(path=str(SHOTS / "explorer-390-denied.png"), full_page=True)
        browser.close()
    assert errors == []
    assert SavedView.objects.get(owner=audrey).query == "outcome=denied&range=7d"
