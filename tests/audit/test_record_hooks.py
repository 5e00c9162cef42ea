"""Why a record was blocked: each record row names its deciding hook by name (description as
a tooltip, linking to the hook's page for admins), a deleted hook by its key and
"deleted", resolved in one query per page; and the reasons kept for hooks opted in to
"record its reason" (only theirs: the console strips the others at ingest)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents import services as agent_services
from agents.selectors import hook_refs
from audit.models import InterceptionRecord
from console_client.reasons import keep_reasons, message_owners, reason_hooks, recorded_reasons
from demo.records import record_item

WORDS = "restarts wait for Monday"


def _hook(agent, name: str, *, record_reason: bool = False, description: str = ""):
    raw = {"name": name, "type": "command", "matcher": "restart_service", "command": "exit 0"}
    if record_reason:
        raw["recordReason"] = True
    if description:
        raw["description"] = description
    hook, _ = agent_services.hook_create(
        actor=None, agent=agent, custom_agent=None, event="PreToolUse", raw=raw
    )
    return hook


def _post(sre, *records: dict) -> None:
    response = Client().post(
        "/api/v1/records",
        json.dumps(list(records)),
        content_type="application/json",
        **sre.headers(),
    )
    assert response.status_code == 202, response.content


def _denied(sequence: int, *hooks: str, message: str = WORDS, session: str = "s1") -> dict:
    return record_item(
        session_id=session,
        sequence=sequence,
        point="pre_tool_call",
        at=timezone.now() - dt.timedelta(seconds=60 - sequence),
        outcome="denied",
        tool_name="restart_service",
        hooks=hooks,
        message=message,
    )


# ---- the rule itself (console_client.reasons), on plain wires ------------------------------


def test_messages_belong_to_the_deciding_hook_and_to_the_hook_whose_reason_a_warning_has():
    wire = {
        "decided_by": 1,
        "verdict": {
            "decision": "deny",
            "message": "m-deny",
            "warnings": [{"reason": "w", "message": "m-w"}, {"reason": "x", "message": "m-x"}],
        },
        "verdicts": [
            {"index": 0, "decision": "allow", "reason": "w", "name": "hk_a"},
            {"index": 1, "decision": "deny", "reason": "d", "name": "hk_b"},
        ],
    }
    assert message_owners(wire) == ("hk_b", ["hk_a", None])
    kept = keep_reasons(wire, {"hk_a"})
    assert "message" not in kept["verdict"]
    assert kept["verdict"]["warnings"] == [{"reason": "w", "message": "m-w"}, {"reason": "x"}]
    assert keep_reasons(wire, {"hk_b"})["verdict"]["message"] == "m-deny"
    assert "message" in wire["verdict"]  # never modified in place
    assert keep_reasons(wire, ()) == {
        **wire,
        "verdict": {"decision": "deny", "warnings": [{"reason": "w"}, {"reason": "x"}]},
    }


def test_a_host_synthesized_verdicts_message_is_the_sdks_own_and_always_kept():
    wire = {
        "decided_by": 0,
        "verdict": {
            "decision": "deny",
            "reason": "host_error:interceptor_failed",
            "message": "CancelledError",
        },
        "verdicts": [
            {
                "index": 0,
                "decision": "deny",
                "reason": "host_error:interceptor_failed",
                "name": "hk_a",
            }
        ],
    }
    assert keep_reasons(wire, ()) == wire
    assert recorded_reasons(wire) == []  # not a hook's words: never shown as a recorded reason


def test_reason_hooks_are_the_bindings_whose_config_says_so():
    document = {
        "bindings": [
            {"id": "console-base", "config": {}},
            {"id": "hk_1", "config": {"recordReason": True}},
            {"id": "hk_2", "config": {"recordReason": "true"}},
            {"id": "hk_3", "config": {"mode": "enforce"}},
        ]
    }
    assert reason_hooks(document) == {"hk_1"}


# ---- ingest --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_ingest_keeps_the_words_of_an_opted_in_hook_of_this_agent_only(sre, other):
    mine = _hook(sre.agent, "restart guard", record_reason=True)
    theirs = _hook(other.agent, "foreign", record_reason=True)
    plain = _hook(sre.agent, "plain guard")
    _post(sre, _denied(0, mine.key), _denied(1, theirs.key), _denied(2, plain.key))
    stored = {r.sequence: r for r in InterceptionRecord.objects.filter(agent=sre.agent)}
    assert stored[0].raw["verdict"]["message"] == WORDS
    assert stored[0].recorded_reasons == [(mine.key, WORDS)]
    # Another agent's opted-in hook does not opt in this agent's records.
    assert "message" not in stored[1].raw["verdict"]
    assert "message" not in stored[2].raw["verdict"] and stored[2].recorded_reasons == []


@pytest.mark.django_db(transaction=True)
def test_a_batch_with_a_stored_record_is_stripped_the_same_way(sre):
    """A batch holding an already stored key is written by the INSERT fallback on
    PostgreSQL (the COPY's transaction rolled back): its new records keep only the words
    of the opted-in hook, as in any batch."""
    mine = _hook(sre.agent, "restart guard", record_reason=True)
    plain = _hook(sre.agent, "plain guard")
    first = _denied(0, plain.key)
    _post(sre, first)
    _post(sre, first, _denied(1, mine.key), _denied(2, plain.key))
    stored = {r.sequence: r for r in InterceptionRecord.objects.filter(agent=sre.agent)}
    assert sorted(stored) == [0, 1, 2]
    assert stored[1].raw["verdict"]["message"] == WORDS
    assert stored[1].recorded_reasons == [(mine.key, WORDS)]
    assert "message" not in stored[0].raw["verdict"]
    assert "message" not in stored[2].raw["verdict"] and stored[2].recorded_reasons == []


# ---- pages ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_record_row_names_its_deciding_hook_and_links_to_its_page(admin_client, sre):
    hook = _hook(sre.agent, "restart guard", description="Only restart off-hours.")
    _post(sre, _denied(0, hook.key))
    body = admin_client.get("/audit/").content.decode()
    assert f'href="/agents/sre-agent/hooks/{hook.key}/overview/"' in body
    assert "restart guard" in body and "Only restart off-hours." in body
    record = InterceptionRecord.objects.get(agent=sre.agent)
    detail = admin_client.get(f"/audit/records/{record.pk}/").content.decode()
    assert f'href="/agents/sre-agent/hooks/{hook.key}/overview/"' in detail
    assert "Only restart off-hours." in detail


@pytest.mark.django_db
def test_an_auditor_gets_the_hook_name_linking_to_its_records(auditor_client, sre):
    hook = _hook(sre.agent, "restart guard", description="Only restart off-hours.")
    _post(sre, _denied(0, hook.key))
    body = auditor_client.get("/audit/").content.decode()
    assert "restart guard" in body and "Only restart off-hours." in body
    assert f'href="/audit/?hook={hook.key}"' in body
    assert "/overview/" not in body  # the hook pages are the admins'


@pytest.mark.django_db
def test_a_deleted_hook_shows_its_key_its_last_name_and_deleted(auditor_client, sre):
    hook = _hook(sre.agent, "short lived")
    _post(sre, _denied(0, hook.key))
    agent_services.hook_delete(actor=None, hook=hook)
    refs = hook_refs([hook.key, "hk_000000000000", "console-base"])
    assert refs[hook.key].deleted and refs[hook.key].name == "short lived"
    assert refs["hk_000000000000"].deleted and refs["hk_000000000000"].name == "hk_000000000000"
    # The declaration's base binding is no hook: never "deleted".
    assert refs["console-base"].builtin and not refs["console-base"].deleted
    body = auditor_client.get("/audit/").content.decode()
    assert hook.key in body and "deleted" in body and "short lived" in body


@pytest.mark.django_db
def test_the_recorded_reason_is_labelled_with_who_opted_in(auditor_client, sre, alice):
    hook = _hook(sre.agent, "restart guard")
    agent_services.hook_update(
        actor=alice,
        hook=hook,
        raw={
            "name": "restart guard",
            "type": "command",
            "matcher": "restart_service",
            "command": "exit 0",
            "recordReason": True,
        },
    )
    _post(sre, _denied(0, hook.key))
    record = InterceptionRecord.objects.get(agent=sre.agent)
    for url in ("/audit/", f"/audit/records/{record.pk}/", "/audit/sessions/s1/?agent=sre-agent"):
        body = auditor_client.get(url).content.decode()
        assert "recorded reason (opted in by alice)" in body, url
        assert WORDS in body, url


@pytest.mark.django_db
def test_hooks_of_a_page_are_resolved_in_a_fixed_number_of_queries(auditor_client, sre):
    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert auditor_client.get("/audit/").status_code == 200
        return len(seen.captured_queries)

    first = _hook(sre.agent, "guard 0")
    _post(sre, _denied(0, first.key))
    few = queries()
    hooks = [_hook(sre.agent, f"guard {n}", description=f"d{n}") for n in range(1, 8)]
    _post(sre, *(_denied(n + 1, h.key) for n, h in enumerate(hooks)))
    assert queries() == few


@pytest.mark.django_db
def test_a_warning_names_the_hook_it_came_from(auditor_client, sre):
    hook = _hook(sre.agent, "stop marker", record_reason=True)
    warned = record_item(
        session_id="s1",
        sequence=0,
        point="output",
        at=timezone.now(),
        outcome="warned",
        hooks=(hook.key,),
        reason="console:stop_rejected",
        message="end with Task complete",
    )
    _post(sre, warned)
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert record.recorded_reasons == [(hook.key, "end with Task complete")]
    body = auditor_client.get(f"/audit/records/{record.pk}/").content.decode()
    warnings = body.split("<dt>Warnings</dt>")[1].split("</dd>")[0]
    assert "console:stop_rejected" in warnings and "stop marker" in warnings
    assert "end with Task complete" in warnings
