"""Real Chromium: an admin creates a named hook, puts it in shadow mode, an agent sends
traffic through the console's runtime endpoint (as Claude Code would), and the hook's page
shows what it would have blocked, while nothing was blocked.

Screenshots go to $SHOTS_DIR when it is set (the hook list, the form and the hook's page at
1440×900 and 390×844)."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from agents.models import Hook
from tests.browser.chromium import launch_chromium
from tests.runtimes.runtime_support import BLOCK_RM_RF, CLAUDE_PRE, payload

WIDE = {"width": 1440, "height": 900}
NARROW = {"width": 390, "height": 844}
RM = {"command": "rm -rf /srv/app/build", "description": "Clean the build"}
LS = {"command": "ls /srv/app", "description": "List"}


def _shots(page: Any, name: str) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    for label, size in (("1440", WIDE), ("390", NARROW)):
        page.set_viewport_size(size)
        page.screenshot(path=os.path.join(folder, f"admin-{name}-{label}.png"), full_page=True)
    page.set_viewport_size(WIDE)


def _agent_call(base: str, token: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        f"{base}/api/v1/hooks/claude-code",
        json=payload(CLAUDE_PRE, tool_input=tool_input),
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_admin_shadows_a_named_hook_and_sees_what_it_would_have_blocked(live_server, alice, sre):
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport=WIDE)
        page.set_default_timeout(15_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alice")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/agents/")

        # Draft: a named, enforced PreToolUse command hook.
        page.goto(f"{base}/agents/sre-agent/hooks/new/?event=PreToolUse")
        page.fill("#id_name", "No rm -rf")
        page.fill("#id_description", "Deletes go one file at a time.")
        page.select_option("#id_event", "PreToolUse")
        page.select_option("#id_type", "command")
        page.fill("#id_matcher", "Bash")
        page.fill("#id_script", BLOCK_RM_RF["script"])
        _shots(page, "hook-form")
        page.click("#hook-form button[type=submit]")
        page.wait_for_url(f"{base}/agents/sre-agent/")
        row = page.locator("#event-PreToolUse .hook-row")
        expect(row).to_contain_text("No rm -rf")
        expect(row).to_contain_text("enforced")

        # Shadow it from its form, reached through its page.
        row.get_by_role("link", name="No rm -rf").click()
        expect(page.locator("#hook-overview h2")).to_have_text("No rm -rf")
        page.locator("#hook-overview").get_by_role("link", name="Edit").click()
        page.select_option("#id_mode", "shadow")
        page.click("#hook-form button[type=submit]")
        page.wait_for_url(f"{base}/agents/sre-agent/")
        expect(row.locator(".badge.hook-shadow")).to_have_text("shadow")
        _shots(page, "hook-list")

        # Demo traffic, as the agent's runtime posts it: three deletes and one listing.
        for tool_input in (RM, RM, LS, RM):
            assert _agent_call(base, sre.token, tool_input) == {}, "a shadow hook never blocks"

        row.get_by_role("link", name="No rm -rf").click()
        totals = page.locator("#hook-activity .activity-totals")
        expect(totals.locator('[data-kind="would_block"] .activity-count')).to_have_text("3")
        expect(totals.locator('[data-kind="allowed"] .activity-count')).to_have_text("1")
        expect(totals.locator('[data-kind="blocked"] .activity-count')).to_have_text("0")
        expect(page.locator(".badge.hook-shadow").first).to_be_visible()
        _shots(page, "hook-page")

        # The count links to the matching records in the audit explorer, shown by name.
        totals.locator('[data-kind="would_block"] a').click()
        page.wait_for_url(f"{base}/audit/?*")
        expect(page.locator("table").first).to_contain_text("No rm -rf")
        _shots(page, "audit-by-hook")
        browser.close()

    hook = Hook.objects.get(agent=sre.agent)
    assert (hook.name, hook.mode, hook.enabled) == ("No rm -rf", "shadow", True)
