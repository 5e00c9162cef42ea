"""Real Chromium: the record explorer. An auditor reads the histogram, narrows by a facet
(in place, the URL follows, a chip takes it off again), opens one bar's period, saves the
filter as a view and opens it again; the page at 1440 and 390 px wide (screenshots in
/tmp/shots-explorer/, never in the repository). The layout with real-length identifiers:
at 1440 px the records table needs no sideways scroll; at 390 px the histogram's count axis
and every audit tab stay in the window."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect, sync_playwright

from agents import services as agent_services
from audit.models import SavedView
from demo.records import record_item, store_items
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


# Identifiers as long as real traffic's (tests/browser: the demo agents send 32-hex session
# ids, hooks named after their matchers, custom agents): the layout must hold with them.
LONG_SESSION = "1d59103e95ce4941874df4227801a90a"
LONG_HOOK_NAME = "PreToolUse restart_service|scale_deployment"
AUDIT_TABS = (
    "/audit/",
    "/audit/sessions/",
    "/audit/events/",
    "/audit/dashboard/",
    "/audit/verify/",
)


def _store_long_identifier_records(sre) -> None:
    hook, _ = agent_services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw={
            "name": LONG_HOOK_NAME,
            "type": "command",
            "matcher": "restart_service|scale_deployment",
            "command": "exit 0",
            "description": "Restarts and scale-downs wait for a reviewer outside the window.",
        },
    )
    start = timezone.now() - dt.timedelta(hours=1)
    items = [
        record_item(
            session_id=LONG_SESSION,
            sequence=i,
            point=point,
            at=start + dt.timedelta(seconds=i),
            outcome=outcome,
            tool_name="ExecuteShellCommand" if point.endswith("tool_call") else "",
            custom_agent="my_hooked_agent",
            hooks=(hook.key,) if outcome != "allowed" else (),
            reason=reason,
        )
        for i, (point, outcome, reason) in enumerate(
            [
                ("pre_model_call", "transformed", "console:additional_context"),
                ("pre_tool_call", "approved", "console:approval_required"),
                ("post_tool_call", "rejected", "console:approval_required"),
                ("post_model_call", "warned", "console:stop_rejected"),
            ]
        )
    ]
    store_items(sre.agent, items)


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_explorer_layout_at_1440_and_390_px(live_server, audrey, rita, sre, other):
    """1440 px: the records table fits beside the facets, its last column (Session) in view
    with no sideways scroll. 390 px: the histogram's count axis stays in view while its plot
    scrolls, and every audit tab is in the window (the tab bar wraps)."""
    build_world(sre, other, reviewer=rita)
    _store_long_identifier_records(sre)
    base = live_server.url
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page, errors = open_page(browser, 1440, 900)
        log_in(page, base, "audrey", landing="/audit/")
        page.goto(f"{base}/audit/?range=7d")
        expect(page.locator("tr[data-record]")).to_have_count(18)
        expect(page.locator(f"td.session-cell a[title$='{LONG_SESSION}']")).to_have_count(4)
        fit = page.evaluate(
            """() => {
              const wrap = document.querySelector('#record-list .table-wrap');
              const last = [...wrap.querySelectorAll('thead th')].pop();
              const box = last.getBoundingClientRect(), edge = wrap.getBoundingClientRect();
              return {scroll: wrap.scrollWidth, client: wrap.clientWidth, header: last.textContent,
                      right: box.right, wrapRight: edge.right, viewport: window.innerWidth};
            }"""
        )
        assert fit["header"] == "Session"
        assert fit["scroll"] <= fit["client"], fit  # nothing to scroll sideways
        assert fit["right"] <= min(fit["wrapRight"], fit["viewport"]) + 0.5, fit
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(SHOTS / "explorer-layout-1440.png"), full_page=True)

        phone, phone_errors = open_page(browser, 390, 844)
        phone.context.add_cookies(page.context.cookies())
        phone.goto(f"{base}/audit/?range=7d")
        phone.wait_for_load_state("load")
        counts = phone.locator("figure.histogram svg text[text-anchor=end]")
        expect(counts.first).to_be_visible()
        labels = counts.evaluate_all(
            "els => els.map(e => { const b = e.getBoundingClientRect();"
            " return [e.textContent, b.left, b.right]; })"
        )
        assert len(labels) >= 2, labels
        assert all(text.replace(",", "").isdigit() for text, _, _ in labels), labels
        assert all(0 <= left and right <= 390 for _, left, right in labels), labels
        # The plot still scrolls in its card (a readable scale), starting at the newest end.
        plot = phone.evaluate(
            """() => { const s = document.querySelector('figure.histogram .hist-scroll');
              return {scroll: s.scrollWidth, client: s.clientWidth, left: s.scrollLeft}; }"""
        )
        assert plot["scroll"] > plot["client"] and plot["left"] > 0, plot
        assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        phone.screenshot(path=str(SHOTS / "explorer-layout-390.png"), full_page=True)

        for path in AUDIT_TABS:
            phone.goto(f"{base}{path}")
            tabs = phone.locator("nav[aria-label='Audit sections'] a")
            expect(tabs).to_have_count(5)
            boxes = tabs.evaluate_all(
                "els => els.map(e => { const b = e.getBoundingClientRect();"
                " return [e.textContent, b.left, b.right, b.width]; })"
            )
            inside = [0 <= left and right <= 390 and width > 0 for _, left, right, width in boxes]
            assert all(inside), (path, boxes)
            bar = phone.locator("nav[aria-label='Audit sections']")
            assert bar.evaluate("n => n.scrollWidth <= n.clientWidth"), path
            expect(bar.locator("a[aria-current=page]")).to_have_count(1)
        phone.screenshot(path=str(SHOTS / "audit-tabs-390.png"))
        browser.close()
    assert errors == [] and phone_errors == []
