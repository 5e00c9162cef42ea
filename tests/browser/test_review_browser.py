"""Real Chromium: review before apply and the health strip. An admin rolls the agent level
back to an earlier revision: the preview lists what changes, Cancel leaves everything as it
was, Confirm applies it. The hook form hides the fields that do not apply and moves focus to
the first error, which clears once the value changes.

Screenshots go to $CONSOLE_SCREENSHOTS (default /tmp/console-screenshots)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from agents import services
from agents.models import ConfigRevision, Hook
from tests.browser.chromium import launch_chromium

SHOTS = Path(os.environ.get("CONSOLE_SCREENSHOTS", "/tmp/console-screenshots"))
WIDE, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}


def _login(page: Page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/agents/")


def _shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for size, suffix in ((WIDE, "1440"), (PHONE, "390")):
        page.set_viewport_size(size)
        page.screenshot(path=str(SHOTS / f"review-{name}-{suffix}.png"), full_page=True)
    page.set_viewport_size(WIDE)


def _history(agent) -> int:
    services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=None,
        event="Stop",
        raw={
            "prompt": "Check the answer ends with 'Task complete.'\n$ARGUMENTS",
            "failMode": "block",
        },
    )
    keep = ConfigRevision.objects.order_by("-number")[0].number
    services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=None,
        event="PostToolUse",
        raw={"type": "command", "matcher": "Bash|ExecuteShellCommand", "command": "exit 0"},
    )
    stop = Hook.objects.get(agent=agent, event="Stop")
    services.hook_update(
        actor=None,
        hook=stop,
        raw={**stop.definition, "timeout": 90, "failMode": "allow"},
    )
    return keep


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_a_rollback_shows_its_diff_is_cancelled_then_confirmed(
    live_server, alice, sre, monkeypatch
):
    monkeypatch.delenv("CONSOLE_LLM_BASE_URL", raising=False)
    keep = _history(sre.agent)
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport=WIDE)
        page.set_default_timeout(15_000)
        _login(page, base)

        page.goto(f"{base}/agents/sre-agent/")
        strip = page.locator("#health-strip")
        expect(strip).to_contain_text("No LLM endpoint is configured")
        expect(strip).to_contain_text("fails open")
        _shoot(page, "health")

        page.goto(f"{base}/agents/sre-agent/history/")
        page.evaluate("window.__sameDocument = true")
        page.locator(f"#revision-{keep}").get_by_role("button", name="Roll back…").click()
        review = page.locator("#diff-panel #review")
        expect(review).to_contain_text(f"rollback of the agent level to revision {keep}")
        expect(review.locator(".review-removed")).to_contain_text(
            "PostToolUse Bash|ExecuteShellCommand"
        )
        changed = review.locator(".review-changed")
        expect(changed).to_contain_text("timeout")
        expect(changed).to_contain_text("failMode")
        assert page.evaluate("window.__sameDocument === true"), "the preview reloaded the page"
        review.scroll_into_view_if_needed()
        _shoot(page, "rollback-preview")

        review.get_by_role("button", name="Cancel").click()
        expect(page.locator("#review")).to_have_count(0)
        expect(page.locator("#diff-panel #revision-diff")).to_be_visible()
        page.goto(f"{base}/agents/sre-agent/")
        expect(page.locator(".hook-row")).to_have_count(2)  # the cancel changed nothing

        page.goto(f"{base}/agents/sre-agent/history/")
        page.locator(f"#revision-{keep}").get_by_role("button", name="Roll back…").click()
        page.locator("#review").get_by_role("button", name="Confirm and apply").click()
        page.wait_for_url(f"{base}/agents/sre-agent/history/")
        expect(page.locator(".msg-success")).to_contain_text(f"Rolled back to revision {keep}")
        _shoot(page, "rollback-done")
        browser.close()

    (stop,) = Hook.objects.filter(agent=sre.agent)
    assert (stop.event, stop.definition["timeout"], stop.definition["failMode"]) == (
        "Stop",
        30,
        "block",
    )


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_the_hook_form_shows_what_applies_and_leads_to_the_first_error(live_server, alice, sre):
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport=WIDE)
        page.set_default_timeout(15_000)
        _login(page, base)

        page.goto(f"{base}/agents/sre-agent/hooks/new/?event=Stop")
        expect(page.locator("#field-matcher")).to_be_hidden()
        expect(page.locator("#field-maxRejections")).to_be_visible()
        page.select_option("#id_event", "PreToolUse")
        page.select_option("#id_type", "approval")
        expect(page.locator("#field-matcher")).to_be_visible()
        expect(page.locator("#field-approvalsRequired")).to_be_visible()
        expect(page.locator("#field-timeout")).to_be_hidden()
        expect(page.locator("#field-prompt")).to_be_hidden()
        _shoot(page, "hook-form-approval")

        page.fill("#id_matcher", "deploy")
        page.fill("#id_approvalsRequired", "11")
        page.click("#hook-form button[type=submit]")
        error = page.locator("#field-approvalsRequired .errorlist")
        expect(error).to_contain_text("approvalsRequired must be between 1 and 10")
        expect(page.locator("#id_approvalsRequired")).to_be_focused()
        page.fill("#id_approvalsRequired", "2")
        expect(error).to_be_hidden()
        expect(page.locator("#field-approvalsRequired")).not_to_have_class("field-invalid")
        page.click("#hook-form button[type=submit]")
        page.wait_for_url(f"{base}/agents/sre-agent/")
        browser.close()

    hook = Hook.objects.get(agent=sre.agent)
    assert (hook.event, hook.definition["approvalsRequired"]) == ("PreToolUse", 2)


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_the_yaml_editor_previews_in_place_and_applies_on_confirm(live_server, alice, sre):
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=custom_agent,
        event="PostToolUse",
        raw={"type": "command", "matcher": "Bash", "script": "#!/bin/bash\necho one\nexit 0\n"},
    )
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport=WIDE)
        page.set_default_timeout(15_000)
        _login(page, base)

        page.goto(f"{base}/agents/sre-agent/custom/triage/yaml/")
        text = page.input_value("#yaml-form textarea")
        edited = text.replace("echo one", "echo two").replace("timeout: 30", "timeout: 60")
        page.fill("#yaml-form textarea", edited)
        page.evaluate("window.__sameDocument = true")
        page.get_by_role("button", name="Review changes…").click()
        review = page.locator("#review")
        expect(review).to_contain_text("Review the change to custom agent triage")
        expect(review.locator(".review-changed .diff .add")).to_contain_text("+echo two")
        assert page.evaluate("window.__sameDocument === true"), "the preview reloaded the page"
        _shoot(page, "yaml-preview")

        review.get_by_role("button", name="Confirm and apply").click()
        page.wait_for_url(f"{base}/agents/sre-agent/custom/triage/yaml/")
        expect(page.locator(".msg-success")).to_contain_text("Saved the document of triage.")
        expect(page.locator("#yaml-form textarea")).to_have_value(edited)
        browser.close()

    hook = Hook.objects.get(custom_agent__name="triage")
    assert (hook.definition["timeout"], "echo two" in hook.definition["script"]) == (60, True)
