"""The record detail page /audit/records/<id>/."""

from __future__ import annotations

from typing import Any

from django.test import Client

from audit import chain
from audit.models import InterceptionRecord
from demo.records import store_items
from tests.audit.pages_support import DANGER_HOOK, World
from tests.audit.record_wires import tool_items


def test_detail_shows_every_stored_field(auditor_client: Client, world: World) -> None:
    record = world.record("sess-alpha", 3)
    body = auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    for text in (
        "sre-agent",
        "sess-alpha",
        "post_tool_call",
        "Bash",
        "console:hook_blocked",
        record.input_identity,
        record.enforced_identity,
        "jcs-sha256",
        "sequential/first_deny",
        "agent-framework",
        '<span class="badge denied"',
        "interceptor #1",
    ):
        assert text in body, text
    # The hook did not opt in to "record its reason": the message never reached storage.
    assert "Dangerous command blocked" not in body
    assert "no hook of this record opted in to record its reason" in body


def test_verdict_hook_ids_link_to_a_filtered_search(auditor_client: Client, world: World) -> None:
    record = world.record("sess-alpha", 3)
    body = auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    assert f'href="/audit/?hook={DANGER_HOOK}"' in body
    assert 'class="decided"' in body


def test_detail_links_to_the_session_timeline(auditor_client: Client, world: World) -> None:
    record = world.record("sess-alpha", 3)
    body = auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    assert "/audit/sessions/sess-alpha/?agent=sre-agent#seq-3" in body


def test_chain_position_and_hash_are_shown_once_sealed(
    auditor_client: Client, world: World, sre: Any
) -> None:
    record = world.record("sess-alpha", 3)
    assert "not sealed yet" in auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    chain.chain_seal(sre.agent.pk)
    record.refresh_from_db()
    body = auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    assert record.seal.chain_hash in body
    assert record.seal.chain_prev in body
    assert f"<dd>{record.seal.chain_seq}</dd>" in body


def test_evaluate_only_record_says_nothing_was_enforced(
    auditor_client: Client, world: World
) -> None:
    record = world.record("sess-gamma", 1)
    body = auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    assert "Evaluate only — not enforced" in body
    assert "triage" in body


def test_records_the_sdk_produced_render_with_their_outcomes(
    auditor_client: Client, sre: Any
) -> None:
    store_items(sre.agent, tool_items(["ls", "rm", "deploy"], approval="expire"))
    denied = InterceptionRecord.objects.get(tool_name="rm")
    expired = InterceptionRecord.objects.get(tool_name="deploy")
    assert "Denied" in auditor_client.get(f"/audit/records/{denied.pk}/").content.decode()
    body = auditor_client.get(f"/audit/records/{expired.pk}/").content.decode()
    assert "Approval expired" in body and "Rejected" not in body


def test_unknown_record_is_404(auditor_client: Client, world: World) -> None:
    assert auditor_client.get("/audit/records/999999/").status_code == 404
