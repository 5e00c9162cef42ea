"""Real Chromium against a real daphne server: an admin deactivates a reviewer whose inbox is
open, and the reviewer's page is disconnected at once (no escalation needed) and lands on the
login page; the user pages, the 403 and the 404 pages at 1440 and 390 px wide.

Screenshots go to $SHOTS_DIR when it is set (users-*.png)."""

from __future__ import annotations

import os
import re
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect, sync_playwright

from approvals.models import ReviewerScope
from tests.approvals.live_server import daphne_server
from tests.browser.chromium import launch_chromium, log_in
from tests.browser.test_reviewer_inbox_browser import in_thread

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(240),
    pytest.mark.django_db(transaction=True),
]

WIDE = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}

# Every websocket close the page sees, kept in sessionStorage so it outlives the reload.
RECORD_SOCKET_CLOSES = """
(() => {
  window.WebSocket = class extends window.WebSocket {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("close", (event) => {
        const seen = JSON.parse(sessionStorage.getItem("socketCloses") || "[]");
        seen.push({url: String(url), code: event.code});
        sessionStorage.setItem("socketCloses", JSON.stringify(seen));
      });
    }
  };
})();
"""


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)
        page.screenshot(path=os.path.join(folder, f"users-{name}.png"), full_page=True)


def test_deactivating_a_reviewer_disconnects_their_open_inbox(alice, rita, sre):
    with daphne_server() as base, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        reviewer = browser.new_context(viewport=WIDE)
        reviewer.add_init_script(RECORD_SOCKET_CLOSES)
        inbox = reviewer.new_page()
        inbox.set_default_timeout(15_000)
        log_in(inbox, base, "rita")
        inbox.goto(f"{base}/approvals/")
        expect(inbox.locator("#live-state")).to_have_text("live")

        admin = browser.new_context(viewport=WIDE).new_page()
        admin.set_default_timeout(15_000)
        log_in(admin, base, "alice")
        admin.goto(f"{base}/users/")
        admin.get_by_role("link", name="rita", exact=True).click()
        admin.get_by_role("link", name="Deactivate rita…").click()
        expect(admin.locator("h1")).to_have_text("Deactivate rita?")
        clicked = time.monotonic()
        admin.get_by_role("button", name="Deactivate rita").click()
        expect(admin.locator(".msg-success")).to_contain_text(
            "Deactivated rita: 1 session(s) ended, 0 API token(s) revoked"
        )
        shot(admin, "deactivated-1440")

        # The reviewer's inbox was closed by the server (4401: the session ended): the page says
        # so, then reloads onto the login form; nothing of the inbox is left on screen.
        expect(inbox.locator("#flash")).to_contain_text("Disconnected: your session has ended")
        expect(inbox.locator("#live-state")).to_have_text("signed out")
        shot(inbox, "reviewer-disconnected-1440")
        expect(inbox).to_have_url(re.compile(r"/accounts/login/\?next=/approvals/"))
        disconnected = time.monotonic() - clicked
        closes = inbox.evaluate("JSON.parse(sessionStorage.getItem('socketCloses') || '[]')")
        assert [close["code"] for close in closes if "view=inbox" in close["url"]] == [4401]
        assert disconnected < 10, disconnected
        expect(inbox.get_by_role("heading", name="Log in")).to_be_visible()
        shot(inbox, "reviewer-after-deactivation-1440")
        assert not in_thread(lambda: User.objects.get(username="rita").is_active)
        browser.close()


def test_the_user_pages_and_error_pages_at_both_widths(alice, rita, audrey, sre, other):
    in_thread(lambda: ReviewerScope.objects.create(user=rita, agent=sre.agent))
    with daphne_server() as base, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        for width, viewport in (("1440", WIDE), ("390", PHONE)):
            admin = browser.new_context(viewport=viewport).new_page()
            admin.set_default_timeout(15_000)
            log_in(admin, base, "alice")
            admin.goto(f"{base}/users/")
            expect(admin.locator("h1")).to_have_text("Users")
            shot(admin, f"list-{width}")

            admin.get_by_role("link", name="Add a user").click()
            username = f"newcomer{width}"
            admin.fill("#id_username", username)
            admin.check("input[name=roles][value=reviewer]")
            admin.check("input[name=agents][value=other-agent]")
            shot(admin, f"new-{width}")
            admin.get_by_role("button", name="Add user").click()
            link = admin.locator("#invitation-link").inner_text()
            assert re.fullmatch(rf"{re.escape(base)}/accounts/reset/[^/]+/[^/]+/", link), link
            admin.fill("#id_name", "ci-export")
            admin.get_by_role("button", name="Issue token").click()
            expect(admin.locator("#token-plaintext")).to_contain_text("pat_")
            shot(admin, f"detail-token-{width}")

            # Refused input stays on the page, names the field, and keeps the roles as ticked.
            admin.uncheck("input[name=roles][value=reviewer]")
            admin.get_by_role("button", name="Save roles").click()
            expect(admin.locator("#field-roles .errorlist")).to_have_text(
                "Choose at least one role."
            )
            shot(admin, f"detail-error-{width}")
            admin.get_by_role("link", name=f"Deactivate {username}…").click()
            expect(admin.locator("h1")).to_have_text(f"Deactivate {username}?")
            shot(admin, f"deactivate-{width}")

            # The invitation link lets the newcomer choose a password on the console's page.
            invited = browser.new_context(viewport=viewport).new_page()
            invited.goto(link)
            expect(invited.locator("h1")).to_have_text("Choose a password")
            shot(invited, f"invitation-{width}")
            invited.context.close()

            reviewer = browser.new_context(viewport=viewport).new_page()
            log_in(reviewer, base, "rita")
            reviewer.goto(f"{base}/users/")
            expect(reviewer.locator("h1")).to_have_text("You may not open this page")
            expect(reviewer.locator(".topbar")).to_be_visible()
            shot(reviewer, f"403-{width}")
            reviewer.context.close()
            admin.context.close()
        browser.close()


def test_without_debug_a_missing_page_is_the_styled_404(alice, monkeypatch):
    monkeypatch.setenv("DEBUG", "0")
    monkeypatch.setenv("SECRET_KEY", "browser-test-only-" + "x" * 50)
    monkeypatch.setenv("ALLOWED_HOSTS", "localhost,127.0.0.1")
    monkeypatch.setenv("SECURE_SSL_REDIRECT", "0")
    with daphne_server() as base, sync_playwright() as playwright:
        # Secure cookies (DEBUG=0) are kept for http://localhost, not for a bare address.
        base = base.replace("127.0.0.1", "localhost")
        browser = launch_chromium(playwright)
        for width, viewport in (("1440", WIDE), ("390", PHONE)):
            page = browser.new_context(viewport=viewport).new_page()
            page.set_default_timeout(15_000)
            log_in(page, base, "alice")
            response = page.goto(f"{base}/agents/no-such-agent/")
            assert response is not None and response.status == 404
            expect(page.locator("h1")).to_have_text("There is nothing here")
            expect(page.locator(".topbar .userbox")).to_contain_text("alice")
            assert "Django tried" not in page.content() and "Traceback" not in page.content()
            shot(page, f"404-{width}")
            page.context.close()
        browser.close()
