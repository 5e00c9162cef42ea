"""Ingest's binary COPY (audit.record_copy): every column is sent as the table's own type,
in the order a derived row lists them, and awkward values come back from PostgreSQL exactly
as posted."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection

from audit import record_copy, record_rows
from audit.models import InterceptionRecord
from audit.record_rows import ValidItem
from console_client.reasons import keep_reasons
from tests.audit.record_wires import items, sdk_session

AWKWARD_REASON = 'tab\there\nnew\rline "quoted" back\\slash \\N zażółć ✓ \u2028'
# How PostgreSQL names each type of record_copy.COPY_TYPES (format_type); a column declared
# varchar(n) takes the same binary form as text.
PG_NAMES = {
    "int8": ("bigint",),
    "int4": ("integer",),
    "text": ("text", "character varying"),
    "bool": ("boolean",),
    "timestamptz": ("timestamp with time zone",),
    "text[]": ("text[]", "character varying[]"),
    "jsonb": ("jsonb",),
}


def test_a_derived_row_lists_the_copy_columns_in_order():
    wires = sdk_session(["ls", "rm", "audit", "crash"])
    for item in items(wires, tool_name="t", framework="f", revision=3):
        row = record_rows.row_from_item(item["record"], item["meta"])
        assert tuple(row) == record_copy.COPY_COLUMNS[3:]
    assert len(record_copy.COPY_TYPES) == len(record_copy.COPY_COLUMNS)


@pytest.mark.postgresql
@pytest.mark.django_db
def test_copy_types_are_the_tables_column_types():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute"
            " WHERE attrelid = 'audit_interceptionrecord'::regclass AND attnum > 0"
            " AND NOT attisdropped"
        )
        table = dict(cursor.fetchall())
    for column, pg_type in zip(record_copy.COPY_COLUMNS, record_copy.COPY_TYPES, strict=True):
        assert table[column] in PG_NAMES[pg_type], column


def _awkward_items() -> list[ValidItem]:
    wires = sdk_session(["ls", "rm", "audit", "crash"])
    wires[0]["verdict"]["reason"] = AWKWARD_REASON
    wires[1]["verdicts"] = [
        {**v, "name": name}
        for v, name in zip(
            wires[1].get("verdicts") or [{"index": 0}] * 3,
            ['hk "q"', "hk\\b", "NULL"],
            strict=False,
        )
    ]
    wires[2]["x"] = 'back\\slash "q" \t\n'
    posted = items(wires, tool_name="to\tol\\", framework="f\nw", revision=3)
    timestamps = [record_rows.parse_timestamp(i["record"].get("timestamp")) for i in posted]
    timestamps[3] = None
    return [ValidItem(i["record"], i["meta"], t) for i, t in zip(posted, timestamps, strict=True)]


@pytest.mark.postgresql
@pytest.mark.django_db
def test_written_rows_read_back_as_derived(sre):
    """write_rows into a scratch table of the same columns: every stored value is the
    derived one (an untimed record gets the received time)."""
    valid = _awkward_items()
    now = dt.datetime(2026, 5, 6, 7, 8, 9, 12, tzinfo=dt.UTC)
    ids = list(range(101, 101 + len(valid)))
    columns = ", ".join(record_copy.COPY_COLUMNS)
    raw = connection.connection
    with raw.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE copy_check (LIKE audit_interceptionrecord INCLUDING DEFAULTS)"
        )
        with cursor.copy(record_copy.copy_sql("copy_check")) as copy:
            record_copy.write_rows(copy, ids, sre.agent.pk, now, valid)
        cursor.execute(f"SELECT {columns} FROM copy_check ORDER BY id")
        stored = cursor.fetchall()
    assert len(stored) == len(valid)
    for pk, item, got in zip(ids, valid, stored, strict=True):
        row = item.row()
        expected = [pk, sre.agent.pk, now, *row.values()]
        if row["timestamp"] is None:
            expected[3] = now
        got = list(got)
        # This connection loads jsonb as its text (the chain sealer reads it so).
        got[-1] = json.loads(got[-1]) if isinstance(got[-1], str) else got[-1]
        assert got == expected
    assert stored[0][record_copy.COPY_COLUMNS.index("reason")] == AWKWARD_REASON


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
