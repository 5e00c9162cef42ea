"""The record's fields are written once (audit.record_fields) and the hash chain's field
list stays exactly what sealed the existing chains."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.db import models

from audit import chain, export, record_rows, services
from audit.models import ChainHead, InterceptionRecord, RecordSeal, RecordSealPending
from audit.openapi import RecordSerializer
from audit.record_fields import (
    EXPORT_COLUMNS,
    INGEST_COLUMNS,
    RECORD_FIELDS,
    STORED_COLUMNS,
    Kind,
)
from tests.audit.record_wires import items, sdk_session

# The field list that sealed every chain so far, copied here on purpose: a change to
# audit.chain.SEALED_FIELDS must fail this file, not quietly re-define the hash.
SEALED_BEFORE = (
    "id",
    "agent_id",
    "custom_agent",
    "session_id",
    "sequence",
    "interception_point",
    "mode",
    "decision",
    "outcome",
    "reason",
    "resolved_by",
    "decided_by",
    "decided_hook",
    "fold_truncated",
    "input_identity",
    "enforced_identity",
    "timestamp",
    "received_at",
    "hook_ids",
    "tool_name",
    "framework",
    "revision",
    "raw",
)
# The search API's and the exports' field order: part of the external contract.
EXPORT_ORDER = (
    "id",
    "timestamp",
    "received_at",
    "agent",
    "custom_agent",
    "session_id",
    "sequence",
    "interception_point",
    "mode",
    "decision",
    "outcome",
    "reason",
    "resolved_by",
    "decided_by",
    "decided_hook",
    "fold_truncated",
    "input_identity",
    "enforced_identity",
    "hook_ids",
    "tool_name",
    "framework",
    "revision",
    "chain_seq",
    "chain_prev",
    "chain_hash",
    "record",
)
# One record's stored values and the hash the chain gave them (computed by the code that
# sealed the existing chains; `received_at` deliberately not in UTC).
KNOWN_VALUES: dict[str, Any] = {
    "id": 41,
    "agent_id": 7,
    "custom_agent": "triage",
    "session_id": "sess-golden",
    "sequence": 3,
    "interception_point": "pre_tool_call",
    "mode": "enforce",
    "decision": "deny",
    "outcome": "denied",
    "reason": "policy:pii ✓",
    "resolved_by": "",
    "decided_by": 0,
    "decided_hook": "hk_guard0001",
    "fold_truncated": True,
    "input_identity": "sha256:ab",
    "enforced_identity": "sha256:ab",
    "timestamp": dt.datetime(2026, 1, 31, 9, 0, 0, 123456, tzinfo=dt.UTC),
    "received_at": dt.datetime(2026, 1, 31, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))),
    "hook_ids": ["hk_guard0001", "hk_audit0002"],
    "tool_name": "Bash",
    "framework": "agent_framework",
    "revision": "3",
    "raw": {"verdict": {"decision": "deny", "reason": "policy:pii ✓"}, "sequence": 3},
}
KNOWN_HASH = "d0d0da9dc578eb636c872e78386c3fe066afd7114d457ecb0201f236ee83f98a"
_MODEL_KINDS = {
    "BigAutoField": Kind.BIGINT,
    "BigIntegerField": Kind.BIGINT,
    "IntegerField": Kind.INTEGER,
    "CharField": Kind.TEXT,
    "TextField": Kind.TEXT,
    "BooleanField": Kind.BOOLEAN,
    "DateTimeField": Kind.DATETIME,
    "HookIdsField": Kind.TEXT_LIST,
    "JSONField": Kind.JSON,
}


def test_the_sealed_fields_are_exactly_those_that_sealed_existing_chains():
    assert chain.SEALED_FIELDS == SEALED_BEFORE


def test_every_stored_column_is_sealed_and_described_once():
    model_columns = tuple(f.attname for f in InterceptionRecord._meta.concrete_fields)
    assert model_columns == chain.SEALED_FIELDS
    assert sorted(STORED_COLUMNS) == sorted(model_columns)
    assert len({f.name for f in RECORD_FIELDS}) == len(RECORD_FIELDS)


def test_the_hash_of_a_known_record_is_unchanged():
    assert chain.chain_digest("0" * 64, KNOWN_VALUES) == KNOWN_HASH


def test_the_export_and_api_field_order_is_unchanged():
    assert EXPORT_COLUMNS == EXPORT_ORDER == export.COLUMNS
    assert tuple(RecordSerializer().fields) == EXPORT_ORDER


@pytest.mark.parametrize("field", [f for f in RECORD_FIELDS if f.source == f.column])
def test_each_stored_field_is_described_as_the_model_declares_it(field):
    model_field = InterceptionRecord._meta.get_field(field.source)
    assert isinstance(model_field, models.Field)
    assert _MODEL_KINDS[model_field.get_internal_type()] == field.kind
    assert model_field.null == field.null
    expected_choices = list(field.choices.choices) if field.choices else []
    assert list(model_field.choices or []) == expected_choices
    if field.kind == Kind.TEXT:
        assert model_field.blank == field.blank


def test_ingest_derives_exactly_the_ingest_columns():
    wires = sdk_session(["ls", "rm"])
    item = items(wires, tool_name="t", custom_agent="c", framework="f", revision=3)[4]
    row = record_rows.row_from_item(item["record"], item["meta"])
    assert tuple(row) == INGEST_COLUMNS
    assert set(INGEST_COLUMNS) == set(STORED_COLUMNS) - {"id", "agent_id", "received_at"}
    assert f"received_at, {', '.join(INGEST_COLUMNS)})" in services._PG_COPY_SQL


def _seal_as_before(agent: Any) -> None:
    """Seal an agent's pending records the way the chain was specified before the record
    schema existed: the old literal field list, stdlib canonical JSON, sha256 over prev."""

    def plain(value: Any) -> Any:
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value

    ids = sorted(
        pk for ids in RecordSealPending.objects.values_list("record_ids", flat=True) for pk in ids
    )
    rows = {
        r["id"]: r for r in InterceptionRecord.objects.filter(pk__in=ids).values(*SEALED_BEFORE)
    }
    prev, now = "0" * 64, dt.datetime.now(dt.UTC)
    for seq, pk in enumerate(ids, start=1):
        document = {name: plain(rows[pk][name]) for name in SEALED_BEFORE}
        canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(prev.encode("ascii") + canonical.encode("utf-8")).hexdigest()
        RecordSeal.objects.create(
            record_id=pk,
            agent=agent,
            chain_seq=seq,
            chain_prev=prev,
            chain_hash=digest,
            sealed_at=now,
        )
        prev = digest
    ChainHead.objects.create(agent=agent, last_seq=len(ids), last_hash=prev)
    RecordSealPending.objects.all().delete()


def _verify() -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("audit_verify", stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


@pytest.mark.django_db
def test_chains_sealed_with_the_old_field_list_verify_with_this_code(client, sre):
    wires = sdk_session(["ls", "rm", "deploy", "crash"]) + sdk_session(["audit", "redact"])
    body = json.dumps(items(wires, tool_name="t", custom_agent="triage", revision=3))
    response = client.post(
        "/api/v1/records", data=body, content_type="application/json", **sre.headers()
    )
    assert response.json() == {"accepted": len(wires), "duplicates": 0}
    assert RecordSeal.objects.count() == 0  # sealing runs on commit, never in this test
    _seal_as_before(sre.agent)
    n = len(wires)
    assert _verify() == (0, f"{sre.agent.slug}: OK {n} records\nOK {n} records\n")

    # The same walk notices a change, so the OK above was earned.
    victim = RecordSeal.objects.get(chain_seq=5).record_id
    InterceptionRecord.objects.filter(pk=victim).update(tool_name="other")
    code, out = _verify()
    assert code == 1 and f"ALTERED record {victim} at chain_seq 5" in out
