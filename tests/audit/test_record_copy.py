"""Ingest's COPY text (audit.record_copy): what psycopg's own row formatter writes, and
awkward values come back from PostgreSQL exactly as posted."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from psycopg._copy_base import TextFormatter
from psycopg.adapt import Transformer

from audit import record_copy, record_rows, services
from audit.models import InterceptionRecord
from console_client.reasons import keep_reasons
from tests.audit.record_wires import items, sdk_session

AWKWARD_REASON = 'tab\there\nnew\rline "quoted" back\\slash \\N zażółć ✓ \u2028'


def awkward_rows() -> list[dict[str, Any]]:
    wires = sdk_session(["ls", "rm", "audit", "crash"])
    posted = items(wires, tool_name="to\tol\\", framework="f\nw", revision=3, custom_agent="")
    rows = [record_rows.row_from_item(i["record"], i["meta"]) for i in posted]
    rows[0]["reason"] = AWKWARD_REASON
    rows[1]["hook_ids"] = ['hk "q"', "hk\\b", "hk,c", "", "NULL", "tab\t"]
    rows[2]["timestamp"] = None
    rows[3]["raw"] = {**rows[3]["raw"], "x": 'back\\slash "q" \t\n', "f": [1.5, None, True]}
    rows[3]["decided_by"] = None
    rows[3]["fold_truncated"] = None
    return rows


def test_copy_text_is_what_psycopg_writes():
    rows = awkward_rows()
    now = dt.datetime(2026, 5, 6, 7, 8, 9, 12, tzinfo=dt.UTC)
    ids = list(range(1, len(rows) + 1))
    formatter = TextFormatter(Transformer())
    chunks = [
        bytes(formatter.write_row((pk, 7, now, *services._pg_values(row, now))))
        for pk, row in zip(ids, rows, strict=True)
    ]
    chunks.append(bytes(formatter.end()))
    # psycopg writes a datetime with a space where isoformat() writes "T": both ISO 8601.
    expected = b"".join(chunks).decode().replace(" 07:08:09", "T07:08:09")
    ours = record_copy.copy_text(ids, 7, now, rows)
    for row in rows:
        if row["timestamp"] is not None:
            expected = expected.replace(str(row["timestamp"]), row["timestamp"].isoformat())
    assert ours == expected
    assert record_copy.COPY_COLUMNS[3:] == tuple(rows[0])


@pytest.mark.postgresql
@pytest.mark.django_db
def test_awkward_values_are_stored_exactly(client, sre):
    wires = sdk_session(["ls", "rm"])
    wires[1]["verdict"]["reason"] = AWKWARD_REASON
    wires[4]["verdicts"][0]["name"] = 'hk "q"\\,{}\t'
    body = json.dumps(items(wires, tool_name="to\tol\\", framework="f\nw", revision=3))
    response = client.post(
        "/api/v1/records", data=body, content_type="application/json", **sre.headers()
    )
    assert response.status_code == 202, response.content
    stored = {r.sequence: r for r in InterceptionRecord.objects.filter(agent=sre.agent)}
    assert len(stored) == len(wires)
    for wire in wires:
        record = stored[wire["sequence"]]
        # Messages of hooks that did not opt in to "record its reason" are not stored.
        assert record.raw == keep_reasons(wire, ())
        assert (record.tool_name, record.framework, record.revision) == ("to\tol\\", "f\nw", "3")
        assert record.reason == (wire["verdict"].get("reason") or "")
        assert record.hook_ids == list(
            dict.fromkeys(v["name"] for v in wire.get("verdicts") or [] if v.get("name"))
        )
    assert stored[wires[1]["sequence"]].reason == AWKWARD_REASON
