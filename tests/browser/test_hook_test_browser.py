"""Real Chromium: the "Test this hook" panel on a hook's edit page tells the truth. A tool
the matcher skips is "not run" (nothing is started); a hook that fails is an error with what
failMode would do, reached through the status the page polls while a real Celery worker
runs the task; bad JSON replaces that error with one naming the sample context.

Screenshots go to $SHOTS_DIR when it is set (each state at 1440×900 and 390×844)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from playwright.sync_api import expect, sync_playwright

from agents.hook_testing import sample_context
from agents.models import Hook
from agents.services import agent_hooks_replace
from console.celery import app as celery_app
from tests.browser.chromium import launch_chromium

WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}
HOOK = {"type": "command", "matcher": "Bash", "command": "exit 0", "failMode": "block"}


def shots(page: Any, state: str) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    for name, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.locator("#hook-test").scroll_into_view_if_needed()
        page.screenshot(path=os.path.join(folder, f"webkit-hook-test-{state}-{name}.png"))
    page.set_viewport_size({"width": 1440, "height": 900})


@pytest.fixture
def worker(transactional_db: Any) -> Any:
    """A real worker thread taking tasks from Redis, so the page has to poll."""
    assert not celery_app.conf.task_always_eager, "this test needs a broker and a worker"
    with start_worker(celery_app, pool="solo", perform_ping_check=False) as running:
        yield running


@pytest.mark.browser
@pytest.mark.timeout(150)
def test_the_test_panel_reports_skips_errors_and_bad_json(live_server, alice, sre, worker):
    agent_hooks_replace(actor=None, agent=sre.agent, document={"hooks": {"PreToolUse": [HOOK]}})
    hook = Hook.objects.get(agent=sre.agent)
    base = live_server.url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(20_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alice")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/agents/")

        polled: list[str] = []
        page.on(
            "request",
            lambda request: polled.append(request.url) if "/hooks/test/" in request.url else None,
        )
        page.goto(f"{base}/agents/sre-agent/hooks/{hook.key}/")
        textarea = page.locator("#hook-test-context")
        expect(page.locator("label[for=hook-test-context]")).to_contain_text(
            "Sample context (JSON: the fields a PreToolUse hook receives)"
        )
        result = page.locator("#hook-test-result")

        # 1. A tool the matcher skips: said so, nothing runs.
        read = {**sample_context("PreToolUse", "sre-agent"), "tool_name": "Read"}
        textarea.fill(json.dumps(read, indent=2))
        page.get_by_role("button", name="Run test").click()
        expect(result).to_contain_text("This hook would not run for tool 'Read'")
        expect(result.locator("[data-decision='allow']")).to_have_count(0)
        shots(page, "not-run")

        # 2. The edited (unsaved) command fails: an error with what failMode does, after
        # the panel polled the status of the task the worker ran.
        page.fill("#id_command", "echo 'jq: command not found' >&2; exit 7")
        bash = {**sample_context("PreToolUse", "sre-agent"), "tool_name": "Bash"}
        textarea.fill(json.dumps(bash, indent=2))
        page.get_by_role("button", name="Run test").click()
        error = result.locator("[data-outcome='error']")
        expect(error).to_be_visible()
        expect(error).to_contain_text("hook error")
        expect(error).to_contain_text("jq: command not found")
        expect(error).to_contain_text("failMode: block")
        expect(error).to_contain_text("would block the call")
        expect(result.locator(".badge.ok")).to_have_count(0)
        assert polled, "the result came without polling the task's status"
        shots(page, "hook-error")

        # 3. Bad JSON: the previous result is replaced by an error naming the field.
        textarea.fill('{"tool_name": "Bash",')
        page.get_by_role("button", name="Run test").click()
        expect(result.locator("[data-outcome='invalid']")).to_contain_text(
            "Sample context: not valid JSON"
        )
        expect(result.locator("[data-outcome='error']")).to_have_count(0)
        shots(page, "bad-json")

        # 4. Save the context as a sample, then re-run the samples on an edited command.
        page.fill("#id_command", "exit 0")
        textarea.fill(json.dumps(bash, indent=2))
        page.fill("#sample-name", "restart is allowed")
        page.select_option("#sample-expected", "allow")
        page.get_by_role("button", name="Save sample").click()
        expect(page.locator("#hook-samples")).to_contain_text("Saved sample restart is allowed.")
        page.get_by_role("button", name="Run all 1 sample").click()
        expect(result).to_contain_text("The sample still gives the expected verdict.")
        page.fill("#id_command", "exit 2")
        page.get_by_role("button", name="Run all 1 sample").click()
        expect(result).to_contain_text("0 of 1 sample give the expected verdict.")
        expect(result.locator("[data-sample='restart is allowed']")).to_contain_text("block")
        shots(page, "suite")
        browser.close()

    # Nothing but the sample was saved: the hook still has its stored command.
    assert Hook.objects.get(pk=hook.pk).definition["command"] == "exit 0"
    assert list(hook.samples.values_list("name", "expected")) == [("restart is allowed", "allow")]
