"""The one way browser tests start Debian's Chromium: headless, no sandbox (root in CI), and
no background networking (this machine has no network beyond loopback)."""

from __future__ import annotations

from typing import Any

CHROMIUM_PATH = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def launch_chromium(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS)


def open_page(browser: Any, width: int = 1440, height: int = 900) -> tuple[Any, list[str]]:
    """A page of `browser` at that viewport with a 15 s default timeout, and the list its
    uncaught JavaScript errors are collected in (a test asserts it stays empty)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


def log_in(page: Any, base: str, username: str, *, landing: str = "") -> None:
    """Sign in through the login form (test users' password is `pw-<username>`); with
    `landing`, wait until the console has redirected there."""
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    page.click("button[type=submit]")
    if landing:
        page.wait_for_url(f"{base}{landing}")
    else:
        page.wait_for_load_state()
