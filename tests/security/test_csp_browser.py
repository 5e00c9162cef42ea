"""Real Chromium under the console's Content-Security-Policy: an admin, a reviewer and an
auditor log in through the form and open every main page (and use a few htmx and script
driven controls); not one `securitypolicyviolation` event fires and the console prints no
"Content Security Policy" message. Every page answers with a CSP header carrying a nonce.

The listener is installed with `add_init_script` (DevTools, not subject to the page's CSP)
before any page script runs, and stores the violations on `window`.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from tests.browser.chromium import launch_chromium
from tests.security.world import CUSTOM, SRE, SRE_SESSION, World, build_world

LISTENER = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push([e.violatedDirective, e.blockedURI, e.sourceFile + ":" + e.lineNumber,
                     (e.sample || "").slice(0, 80)].join(" | "));
});
"""
PASSWORDS = {"admin": "alice", "rev": "rita", "auditor": "audrey"}


def _pages(world: World) -> dict[str, list[str]]:
    a = f"/agents/{SRE}"
    record = f"/audit/records/{world.record.pk}/"
    session = f"/audit/sessions/{SRE_SESSION}/?agent={SRE}"
    audit = ["/audit/", record, "/audit/sessions/", session, "/audit/events/", "/audit/dashboard/"]
    return {
        "admin": [
            "/agents/",
            f"{a}/",
            f"{a}/hooks/new/",
            f"{a}/hooks/{world.hook.key}/",
            f"{a}/settings/",
            f"{a}/custom/",
            f"{a}/custom/{CUSTOM}/",
            f"{a}/custom/{CUSTOM}/yaml/",
            f"{a}/custom/{CUSTOM}/settings/",
            f"{a}/custom/{CUSTOM}/history/",
            f"{a}/tokens/",
            f"{a}/history/",
            f"{a}/history/{world.revision}/",
            "/approvals/",
            "/approvals/history/",
            f"/approvals/{world.escalation.pk}/",
            *audit,
            "/api/docs/",
            "/users/",
            "/users/new/",
            world.fmt("/users/{person}/"),
            world.fmt("/users/{person}/deactivate/"),
        ],
        "rev": [
            "/approvals/",
            "/approvals/history/",
            world.fmt("/approvals/link/{link}/"),
            f"/approvals/{world.escalation.pk}/",
            "/api/docs/",
        ],
        "auditor": [*audit, "/api/docs/"],
    }


class Watch:
    """Violations and CSP console messages of one browser context."""

    def __init__(self, context: BrowserContext) -> None:
        self.messages: list[str] = []
        self.errors: list[str] = []
        context.add_init_script(LISTENER)
        self.context = context

    def attach(self, page: Page) -> Page:
        def on_console(message: Any) -> None:
            text = message.text
            if "Content Security Policy" in text or "Content-Security-Policy" in text:
                self.messages.append(f"{page.url}: {text[:200]}")

        page.on("console", on_console)
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: {exc}"))
        return page


def _violations(page: Page) -> list[str]:
    return [f"{page.url}: {item}" for item in page.evaluate("window.__csp || []")]


def _visit(page: Page, base: str, path: str, problems: list[str]) -> None:
    response = page.goto(base + path)
    assert response is not None
    if response.status != 200:
        problems.append(f"{path}: status {response.status}")
    policy = response.headers.get("content-security-policy", "")
    if "'nonce-" not in policy or "script-src" not in policy:
        problems.append(f"{path}: CSP header without a nonce: {policy!r}")
    page.wait_for_load_state("load")
    if path == "/api/docs/":
        # Swagger UI renders after fetching the schema; open one operation fully.
        page.locator(".opblock-summary").first.click()
        page.wait_for_selector(".opblock-body")
    page.wait_for_timeout(250)  # htmx settles, deferred scripts run
    problems.extend(_violations(page))


def _log_in(page: Page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def _interact_as_admin(page: Page, base: str, world: World, problems: list[str]) -> None:
    """Controls that swap HTML in or toggle parts of the page."""
    page.goto(f"{base}/agents/{SRE}/hooks/new/")
    page.select_option("#id_event", "PreToolUse")  # Stop hooks have no matcher field
    page.select_option("#id_type", "command")
    page.select_option("#id_type", "approval")
    page.fill("#id_matcher", "(unclosed")
    page.click("#hook-form button[type=submit]")  # htmx swaps the form with its errors
    page.wait_for_selector(
        "#hook-form .errorlist, #hook-form .field-error, #hook-form [role=alert]"
    )
    problems.extend(_violations(page))
    page.goto(f"{base}/agents/{SRE}/custom/{CUSTOM}/yaml/")
    page.fill("#yaml-form textarea", "api_version: [unclosed")
    page.click("#yaml-form button[type=submit]")
    page.wait_for_selector("#yaml-form [role=alert], #yaml-form .errorlist")
    problems.extend(_violations(page))
    page.goto(f"{base}/agents/{SRE}/tokens/")
    page.fill("input[name=name]", "browser")
    page.click("form.inline-form button[type=submit]")
    page.wait_for_load_state("load")
    problems.extend(_violations(page))


def _interact_as_reviewer(page: Page, base: str, world: World, problems: list[str]) -> None:
    page.goto(f"{base}/approvals/")
    row = page.locator(f"#esc-{world.escalation.pk}")
    row.locator("button.approve-button").click()  # htmx: the row goes, a flash comes
    row.wait_for(state="detached")
    page.wait_for_timeout(250)
    problems.extend(_violations(page))


def _control(page: Page, watch: Watch) -> None:
    """The listeners work: an inline script without the nonce is refused and reported."""
    page.evaluate(
        """() => { const s = document.createElement("script");
                   s.textContent = "window.__ran = true"; document.body.appendChild(s); }"""
    )
    page.wait_for_timeout(200)
    assert page.evaluate("window.__ran === undefined")
    assert any("script-src" in item for item in _violations(page))
    assert any("Content Security Policy" in message for message in watch.messages)
    page.evaluate("window.__csp = []")
    watch.messages.clear()


def _interact_as_auditor(page: Page, base: str, problems: list[str]) -> None:
    page.goto(f"{base}/audit/")
    page.select_option("#f-outcome", "denied")
    page.wait_for_url(lambda url: "outcome=denied" in url)
    page.wait_for_timeout(250)
    problems.extend(_violations(page))


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_no_page_violates_the_content_security_policy(
    live_server: Any, fast_password_hashing: None
) -> None:
    world = build_world()
    for user in world.users.values():
        user.set_password(f"pw-{user.username}")
        user.save(update_fields=["password"])
    base = live_server.url
    problems: list[str] = []
    messages: list[str] = []
    errors: list[str] = []
    visited = 0
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            anonymous = Watch(browser.new_context())
            _visit(
                anonymous.attach(anonymous.context.new_page()), base, "/accounts/login/", problems
            )
            for persona, path_list in _pages(world).items():
                watch = Watch(browser.new_context())
                page = watch.attach(watch.context.new_page())
                page.set_default_timeout(15_000)
                _log_in(page, base, PASSWORDS[persona])
                problems.extend(_violations(page))
                for path in path_list:
                    _visit(page, base, path, problems)
                    visited += 1
                if persona == "admin":
                    _interact_as_admin(page, base, world, problems)
                if persona == "rev":
                    _interact_as_reviewer(page, base, world, problems)
                if persona == "auditor":
                    _interact_as_auditor(page, base, problems)
                messages += watch.messages
                errors += watch.errors
                watch.context.close()
            messages += anonymous.messages
        finally:
            browser.close()
    assert visited >= 30
    assert problems == [], "\n".join(problems)
    assert messages == [], "\n".join(messages)
    assert errors == [], "\n".join(errors)
