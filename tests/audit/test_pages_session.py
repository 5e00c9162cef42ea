"""The session timeline /audit/sessions/<id>/ and the recent sessions list."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.test import Client
from django.utils import timezone

from demo.records import store_items
from tests.audit.pages_support import ALPHA, World, session_items


def _entries(body: str) -> list[str]:
    """Timeline items in page order: `seq:N`, `gap:A-B` or `approval`."""
    found = re.findall(r'data-(sequence|gap|escalation)="([^"]+)"', body)
    return [
        f"seq:{value}"
        if kind == "sequence"
        else ("approval" if kind == "escalation" else f"gap:{value}")
        for kind, value in found
    ]


def test_timeline_lists_records_in_sequence_order_with_the_approval_inline(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/sessions/sess-alpha/?agent=sre-agent").content.decode()
    assert _entries(body) == ["seq:0", "seq:1", "seq:2", "approval", "seq:3", "seq:4", "seq:5"]
    assert "Approved by reviewer" in body
    assert "rita decided after 30 s" in body
    assert "Maintenance window." in body
    assert (
        'data-export="csv" href="/api/v1/records/export?format=csv&amp;agent=sre-agent'
        '&amp;session_id=sess-alpha"'
    ) in body


def test_timeline_orders_by_sequence_not_by_arrival(
    auditor_client: Client, sre: Any, other: Any
) -> None:
    items = session_items("sess-shuffled", ALPHA, start=timezone.now())
    store_items(sre.agent, [items[4], items[0], items[5]])
    store_items(sre.agent, [items[2], items[1], items[3]])
    body = auditor_client.get("/audit/sessions/sess-shuffled/").content.decode()
    assert _entries(body) == [f"seq:{n}" for n in range(6)]


def test_sequence_gaps_are_flagged(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/sessions/sess-beta/?agent=sre-agent").content.decode()
    assert _entries(body) == ["seq:0", "seq:1", "gap:1-4", "seq:4", "seq:5"]
    assert "2 records missing between #1 and #4" in body
    assert "1 gap in the sequence" in body


def test_complete_session_has_no_gap_or_missing_end_flags(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/sessions/sess-alpha/?agent=sre-agent").content.decode()
    assert "gap" not in " ".join(_entries(body))
    assert "No <code>agent_shutdown</code> yet" not in body
    assert "is not <code>agent_startup</code>" not in body


def test_session_without_shutdown_is_shown_as_still_open(auditor_client: Client, sre: Any) -> None:
    items = session_items("sess-open", ALPHA[:3], start=timezone.now())
    store_items(sre.agent, items)
    body = auditor_client.get("/audit/sessions/sess-open/").content.decode()
    assert "No <code>agent_shutdown</code> yet" in body


def test_a_session_id_shared_by_two_agents_asks_which_agent(
    auditor_client: Client, sre: Any, other: Any
) -> None:
    now = timezone.now()
    store_items(sre.agent, session_items("sess-shared", ALPHA[:2], start=now))
    store_items(other.agent, session_items("sess-shared", ALPHA[:3], start=now))
    body = auditor_client.get("/audit/sessions/sess-shared/").content.decode()
    assert _entries(body) == []
    assert "/audit/sessions/sess-shared/?agent=other-agent" in body
    pinned = auditor_client.get("/audit/sessions/sess-shared/?agent=other-agent").content.decode()
    assert _entries(pinned) == ["seq:0", "seq:1", "seq:2"]


def test_expired_approval_is_not_shown_as_a_rejection(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/sessions/sess-beta/?agent=sre-agent").content.decode()
    assert "1 × Approval expired" in body
    assert "Rejected" not in body


def test_recent_sessions_list_groups_records_per_session(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/sessions/").content.decode()
    rows = re.findall(r'href="(/audit/sessions/[^"]+)"', body)
    assert rows[:3] == [
        "/audit/sessions/sess-alpha/?agent=sre-agent",
        "/audit/sessions/sess-beta/?agent=sre-agent",
        "/audit/sessions/sess-gamma/?agent=other-agent",
    ]
    only_other = auditor_client.get("/audit/sessions/?agent=other-agent").content.decode()
    assert "sess-gamma" in only_other and "sess-alpha" not in only_other


def test_recent_sessions_default_to_the_last_week(
    auditor_client: Client, world: World, sre: Any
) -> None:
    old = timezone.now() - dt.timedelta(days=20)
    store_items(sre.agent, session_items("sess-old", ALPHA, start=old))
    assert "sess-old" not in auditor_client.get("/audit/sessions/").content.decode()
    since = old.date().isoformat()
    assert "sess-old" in auditor_client.get(f"/audit/sessions/?since={since}").content.decode()
