"""The events page shows a configuration event's recorded change: a one-line summary that
opens (a <details>, no JavaScript) onto each field's before → after."""

from __future__ import annotations

import html
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from agents import services
from console.governance.services import governance_event_record


def _page(client: Client, query: str) -> str:
    response = client.get(f"/audit/events/?{query}")
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_hook_edit_shows_its_fields_before_and_after(
    auditor_client: Client, sre: Any, alice: User
) -> None:
    hook, _ = services.hook_create(
        actor=alice,
        agent=sre.agent,
        custom_agent=None,
        event="Stop",
        raw={"type": "prompt", "prompt": "Finished?", "timeout": 30},
    )
    services.hook_update(
        actor=alice, hook=hook, raw={"type": "prompt", "prompt": "Done yet?", "timeout": 60}
    )

    body = _page(auditor_client, "action=hook.updated")

    assert '<details class="before-after event-changes">' in body
    assert "<summary>2 fields changed</summary>" in body
    assert "<code>Finished?</code>" in body and "<code>Done yet?</code>" in body
    assert "<code>30</code>" in body and "<code>60</code>" in body


def test_long_text_is_shown_as_a_line_diff(auditor_client: Client, sre: Any) -> None:
    services.agent_hooks_replace(
        actor=None,
        agent=sre.agent,
        document={"hooks": {"Stop": [{"type": "prompt", "prompt": "Line one\nLine two\n"}]}},
    )
    services.agent_hooks_replace(
        actor=None,
        agent=sre.agent,
        document={"hooks": {"Stop": [{"type": "prompt", "prompt": "Line one\nLine 2\n"}]}},
    )

    body = _page(auditor_client, "action=hooks.replaced")

    assert '<span class="del">-Line two</span><span class="add">+Line 2</span>' in body


def test_settings_show_the_webhook_url_change(auditor_client: Client, sre: Any) -> None:
    agent = sre.agent
    services.agent_settings_update(
        actor=None,
        agent=agent,
        display_name=agent.display_name,
        description=agent.description,
        webhook_url="https://hooks.example.com/sre",
        webhook_format=agent.webhook_format,
    )

    body = _page(auditor_client, "action=agent.settings_changed")

    assert "<summary>1 field changed</summary>" in body
    assert "<code>webhook_url</code>" in body
    assert "<code>https://hooks.example.com/sre</code>" in body


def test_an_older_event_without_changes_shows_its_raw_before_and_after(
    auditor_client: Client, sre: Any
) -> None:
    governance_event_record(
        actor=None,
        action="agent.mode_changed",
        summary="set to evaluate_only",
        agent=sre.agent,
        before={"mode": "enforce"},
        after={"mode": "evaluate_only"},
    )

    body = _page(auditor_client, "action=agent.mode_changed&q=set+to")

    assert "event-changes" not in body
    assert "Before / after" in body and '"mode": "evaluate_only"' in body
