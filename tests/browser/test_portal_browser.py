"""Real Chromium: an admin creates a PostToolUse command hook through the portal form, gets
the timeout error beside the field without a page reload, fixes it and sees the hook listed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from agents.models import Hook
from tests.browser.chromium import launch_chromium


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_admin_creates_a_hook_and_fixes_a_timeout_error_in_place(live_server, alice, sre):
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.set_default_timeout(15_000)

        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alice")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/agents/")

        page.goto(f"{base}/agents/sre-agent/")
        page.get_by_role("link", name="Create hook", exact=True).click()
        page.wait_for_url(f"{base}/agents/sre-agent/hooks/new/")
        page.select_option("#id_event", "PostToolUse")
        page.select_option("#id_type", "command")
        expect(page.locator("#id_prompt")).to_be_hidden()
        page.fill("#id_matcher", "Bash|ExecuteShellCommand")
        page.fill("#id_command", "echo audited")
        page.fill("#id_timeout", "301")
        page.evaluate("window.__sameDocument = true")
        page.click("#hook-form button[type=submit]")

        error = page.locator("#field-timeout .errorlist")
        expect(error).to_contain_text("timeout must be between 1 and 300, got 301")
        assert page.evaluate("window.__sameDocument === true"), "the page reloaded"
        assert page.url == f"{base}/agents/sre-agent/hooks/new/"
        expect(page.locator("#id_command")).to_have_value("echo audited")

        page.fill("#id_timeout", "30")
        page.click("#hook-form button[type=submit]")
        page.wait_for_url(f"{base}/agents/sre-agent/")
        group = page.locator("#event-PostToolUse")
        expect(group).to_contain_text("echo audited")
        expect(group).to_contain_text("Bash|ExecuteShellCommand")
        expect(group).to_contain_text("timeout 30s")
        browser.close()

    hook = Hook.objects.get(agent=sre.agent)
    assert (hook.event, hook.definition["timeout"], hook.definition["command"]) == (
        "PostToolUse",
        30,
        "echo audited",
    )
