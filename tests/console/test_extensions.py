"""Extension points (console/extensions.py): an app above contributes to the pages of an app
below without that app importing it. The audit app registers the agent pages' providers in
its `ready()`; without them the agent pages still work, only the audit sections are gone."""

from __future__ import annotations

import pytest

from agents import extensions
from console.extensions import ExtensionPoint
from tests.runtimes.runtime_support import BLOCK_RM_RF, add_hook

AGENT_POINTS = (
    extensions.agent_hooks_sections,
    extensions.hook_page_sections,
    extensions.hook_notes,
)


def first(value: int) -> str:
    return f"first {value}"


def second(value: int) -> str:
    return f"second {value}"


def test_a_point_runs_its_providers_in_registration_order() -> None:
    point: ExtensionPoint[[int], str] = ExtensionPoint("test.point")
    assert point(1) == []
    point.register(second)
    point.register(first)
    assert point(7) == ["second 7", "first 7"]


def test_registering_a_provider_again_replaces_it() -> None:
    # A second ready() (test runners can call it) must not show a section twice.
    point: ExtensionPoint[[int], str] = ExtensionPoint("test.point")
    point.register(first)
    point.register(first)
    assert point(2) == ["first 2"]
    assert point.providers() == [f"{__name__}.first"]


def test_the_audit_app_provides_the_agent_pages_sections() -> None:
    assert [point.providers() for point in AGENT_POINTS] == [
        ["audit.agent_pages.dead_letters_section"],
        ["audit.agent_pages.hook_activity_section"],
        ["audit.agent_pages.last_error_notes"],
    ]


@pytest.fixture
def without_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for point in AGENT_POINTS:
        monkeypatch.setattr(point, "_providers", {})


@pytest.mark.django_db
def test_the_agent_pages_work_without_any_provider(admin_client, sre, without_providers):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    hooks_page = admin_client.get(f"/agents/{sre.agent.slug}/")
    assert hooks_page.status_code == 200 and b'id="health-strip"' in hooks_page.content
    page = admin_client.get(f"/agents/{sre.agent.slug}/hooks/{hook.key}/overview/")
    html = page.content.decode()
    assert page.status_code == 200 and "<h2>No rm -rf</h2>" in html
    assert 'id="hook-revisions"' in html and 'id="hook-activity"' not in html


@pytest.mark.django_db
def test_with_the_audit_providers_the_hook_page_shows_its_activity(admin_client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    html = admin_client.get(f"/agents/{sre.agent.slug}/hooks/{hook.key}/overview/").content
    assert b'id="hook-activity"' in html and b'data-kind="blocked"' in html
