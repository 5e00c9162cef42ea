"""GET /api/v1/records/export: content equals the database, filter header, event, access."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
from typing import Any

import pytest

from audit import export
from audit.chain import chain_seal
from audit.models import InterceptionRecord
from audit.selectors import records_filter
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import tool_items

URL = "/api/v1/records/export"
pytestmark = pytest.mark.django_db


@pytest.fixture
def data(client, sre, other) -> None:
    for agent, calls in ((sre, ["ls", "rm", "deploy"]), (sre, ["crash", "audit"]), (other, ["rm"])):
        body = json.dumps(tool_items(calls))
        response = client.post(
            "/api/v1/records", data=body, content_type="application/json", **agent.headers()
        )
        assert response.status_code == 202
    chain_seal(sre.agent.pk)  # sre sealed, other left pending: both shapes exported


def body_of(response: Any) -> str:
    assert response.status_code == 200, getattr(response, "content", b"")[:500]
    return b"".join(response.streaming_content).decode()


def from_db(record: InterceptionRecord) -> dict[str, Any]:
    """The expected row, built from the model without the export's own formatting code."""
    seal = getattr(record, "seal", None)
    return {
        "id": record.pk,
        "timestamp": record.timestamp,
        "received_at": record.received_at,
        "agent": record.agent.slug,
        "custom_agent": record.custom_agent,
        "session_id": record.session_id,
        "sequence": record.sequence,
        "interception_point": record.interception_point,
        "mode": record.mode,
        "decision": record.decision,
        "outcome": record.outcome,
        "reason": record.reason,
        "resolved_by": record.resolved_by,
        "decided_by": record.decided_by,
        "decided_hook": record.decided_hook,
        "fold_truncated": record.fold_truncated,
        "input_identity": record.input_identity,
        "enforced_identity": record.enforced_identity,
        "hook_ids": record.hook_ids,
        "tool_name": record.tool_name,
        "framework": record.framework,
        "revision": record.revision,
        "chain_seq": seal.chain_seq if seal else None,
        "chain_prev": seal.chain_prev if seal else None,
        "chain_hash": seal.chain_hash if seal else None,
        "record": record.raw,
    }


def expected_rows(**filters: str) -> list[dict[str, Any]]:
    qs = InterceptionRecord.objects.select_related("agent", "seal").order_by("timestamp", "id")
    if "agent" in filters:
        qs = qs.filter(agent__slug=filters["agent"])
    if "outcome" in filters:
        qs = qs.filter(outcome=filters["outcome"])
    return [from_db(record) for record in qs]


def _time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def parse_csv_row(row: dict[str, str]) -> dict[str, Any]:
    def number(value: str) -> int | None:
        return int(value) if value != "" else None

    parsed: dict[str, Any] = dict(row)
    for name in ("id", "sequence", "decided_by", "chain_seq"):
        parsed[name] = number(row[name])
    for name in ("timestamp", "received_at"):
        parsed[name] = _time(row[name])
    parsed["fold_truncated"] = {"true": True, "false": False, "": None}[row["fold_truncated"]]
    parsed["hook_ids"] = json.loads(row["hook_ids"])
    parsed["record"] = json.loads(row["record"])
    for name in ("chain_prev", "chain_hash"):
        parsed[name] = row[name] or None
    return parsed


def parse_csv(text: str) -> tuple[str, list[dict[str, Any]], str]:
    lines = text.splitlines(keepends=True)
    first, last = lines[0], lines[-1]
    reader = csv.DictReader(io.StringIO("".join(lines[1:-1])))
    assert tuple(reader.fieldnames or ()) == export.COLUMNS
    return first, [parse_csv_row(row) for row in reader], last


def parse_jsonl(text: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines()]
    rows = lines[1:-1]
    for row in rows:
        row["timestamp"], row["received_at"] = _time(row["timestamp"]), _time(row["received_at"])
    return lines[0], rows, lines[-1]


def test_csv_export_equals_the_database_for_the_filter(auditor_client, data):
    text = body_of(auditor_client.get(URL, {"format": "csv", "agent": "sre-agent"}))
    first, rows, last = parse_csv(text)
    expected = expected_rows(agent="sre-agent")
    assert len(expected) == 13
    assert rows == expected
    assert first.startswith("# console records export; filter: agent=sre-agent; exported_at: ")
    assert last == "# end of export: 13 rows\n"
    assert all(row["chain_seq"] and len(row["chain_hash"]) == 64 for row in rows)


def test_jsonl_export_equals_the_database_for_the_filter(auditor_client, data):
    response = auditor_client.get(URL, {"format": "jsonl", "outcome": "denied"})
    assert response["Content-Type"] == "application/x-ndjson"
    head, rows, tail = parse_jsonl(body_of(response))
    assert rows == expected_rows(outcome="denied")
    assert {row["agent"] for row in rows} == {"sre-agent", "other-agent"}
    assert head["export"]["filter"] == {"outcome": "denied"}
    assert _time(head["export"]["exported_at"]) <= dt.datetime.now(dt.UTC)
    assert tail == {"export_end": {"rows": 2}}


def test_unsealed_records_export_with_empty_chain_fields(auditor_client, data):
    _head, rows, _tail = parse_jsonl(
        body_of(auditor_client.get(URL, {"format": "jsonl", "agent": "other-agent"}))
    )
    assert rows and all(row["chain_seq"] is None and row["chain_hash"] is None for row in rows)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_portable_path_writes_the_same_content_as_copy(alice, data, fmt):
    qs = records_filter({"agent": "sre-agent"}, user=alice)
    copied = b"".join(export.stream_copy(qs, fmt, b"")).decode()
    portable = b"".join(export.stream_python(qs, fmt, b"")).decode()

    def parse(text: str) -> list[dict[str, Any]]:
        body = text.splitlines(keepends=True)[:-1]
        if fmt == "jsonl":
            return [json.loads(line) for line in body]
        header = ",".join(export.COLUMNS) + "\n"
        return [parse_csv_row(r) for r in csv.DictReader(io.StringIO(header + "".join(body)))]

    assert parse(copied) == parse(portable)
    assert copied.splitlines()[-1] == portable.splitlines()[-1]


def test_export_writes_a_governance_event_naming_the_filter(auditor_client, audrey, data):
    body_of(auditor_client.get(URL, {"format": "csv", "agent": "sre-agent", "outcome": "denied"}))
    event = GovernanceEvent.objects.get(action="records.exported")
    assert event.actor == audrey
    assert event.after == {"filter": {"agent": "sre-agent", "outcome": "denied"}, "format": "csv"}
    assert "agent=sre-agent outcome=denied" in event.summary


def test_default_format_is_csv_and_is_an_attachment(admin_client, data):
    response = admin_client.get(URL)
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="records-')
    assert body_of(response).splitlines()[-1] == "# end of export: 18 rows"


@pytest.mark.parametrize(
    ("params", "pointer"),
    [({"format": "xml"}, "/format"), ({"since": "soon"}, "/since"), ({"colour": "red"}, "/colour")],
)
def test_bad_format_or_filter_is_400_and_no_event(auditor_client, data, params, pointer):
    response = auditor_client.get(URL, params)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [pointer]
    assert not GovernanceEvent.objects.filter(action="records.exported").exists()


@pytest.mark.parametrize("who", ["reviewer_client", "outsider_client"])
def test_only_auditors_and_admins_export(request, who, data):
    assert request.getfixturevalue(who).get(URL).status_code == 403


def test_agent_tokens_may_not_export(client, sre, data):
    assert client.get(URL, **sre.headers()).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_async_stream_uses_its_own_connection_and_matches_the_sync_one(alice, data):
    qs = records_filter({"agent": "sre-agent"}, user=alice)
    statement = export.copy_statement_for_async(qs, "jsonl")

    async def consume() -> bytes:
        return b"".join([chunk async for chunk in export.astream_copy(statement, "jsonl", b"")])

    streamed = asyncio.run(consume()).decode()
    synced = b"".join(export.stream_copy(qs, "jsonl", b"")).decode()
    assert streamed == synced
    assert json.loads(streamed.splitlines()[-1]) == {"export_end": {"rows": 13}}
