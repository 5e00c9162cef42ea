"""The fast sealer (PostgreSQL: one read of the sealed columns, COPY of the seals) hashes
exactly what the reference reader of `audit_verify` (the ORM) hashes, for awkward values
too, and seals many pending batches, in order, in one go."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.db import connection, transaction

from audit import chain, chain_pg
from audit.models import ChainHead, InterceptionRecord, RecordSeal, RecordSealPending
from tests.audit.record_wires import items, sdk_session
from tests.audit.rollup_support import assert_rollups_match_records, stored_counts

pytestmark = pytest.mark.django_db


def ingest(client: Any, agent: Any, calls: list[str]) -> None:
    body = json.dumps(items(sdk_session(calls), tool_name="t"))
    response = client.post(
        "/api/v1/records", data=body, content_type="application/json", **agent.headers()
    )
    assert response.status_code == 202, response.content


AWKWARD: list[dict[str, Any]] = [
    # Years before 1000 (strftime leaves them unpadded), microseconds, offsets.
    {
        "timestamp": dt.datetime(999, 3, 4, 5, 6, 7, 89, tzinfo=dt.UTC),
        "received_at": dt.datetime(2026, 1, 31, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=5))),
    },
    {"timestamp": dt.datetime(1, 1, 1, tzinfo=dt.UTC)},
    {"timestamp": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)},
    # Text COPY and JSON must both escape: tabs, newlines, quotes, backslashes, non-ASCII.
    {
        "reason": 'tab\there\nnew "quoted" back\\slash zażółć ✓ \u2028',
        "hook_ids": ['hk "q"', "hk\\b", "hk,c", "", "NULL"],
        "tool_name": "\\N",
        "custom_agent": "{a,b}",
    },
    # Strings whose JSON escapes or passes through: every control character, DEL, a
    # character past the BMP, and the separators JavaScript treats as line ends.
    {
        "session_id": "".join(map(chr, range(1, 32))) + "\x7f",
        "decided_hook": "😀 \u2028\u2029 \ufeff",
        "hook_ids": ["\x01\x1f", "😀", "\\u0041"],
    },
    {"decided_by": None, "fold_truncated": None, "hook_ids": []},
    {"fold_truncated": False, "decided_by": 2**31 - 1, "sequence": -(2**63)},
    # raw: unsorted and nested keys, floats, exponents, unicode, 64-bit integers (orjson
    # reads longer ones as floats; json.loads, the reference, as ints).
    {
        "raw": {
            "z": {"b": [1.5, -0.0, 1.5e10, 1e-7, 0.1], "a": None},
            "A": "ünïcødé \x1f ctrl",
            "big": 2**64 - 1,
            "neg": -(2**63),
            "t": True,
        }
    },
    # Numbers orjson cannot write: an integer past 64 bits, and a float with a large
    # exponent that jsonb hands back as an integer of 301 digits. The definition (stdlib
    # json.dumps) takes over, so such a record cannot stall its agent's chain.
    {"raw": {"verdict": {"approval": {"n": 2**70, "f": 1.5e300}}, "z": [2**64, -(2**63) - 1]}},
]


@pytest.mark.postgresql
def test_the_fast_reader_hashes_what_the_reference_reader_hashes(client, sre):
    ingest(client, sre, ["ls", "rm", "audit", "deploy", "grep"])
    records = list(InterceptionRecord.objects.filter(agent=sre.agent).order_by("id"))
    assert len(records) >= len(AWKWARD)
    for record, values in zip(records, AWKWARD, strict=False):
        InterceptionRecord.objects.filter(pk=record.pk).update(**values)
    ids = [record.pk for record in records]
    reference = {
        row["id"]: chain.record_canonical(row)
        for row in InterceptionRecord.objects.filter(pk__in=ids).values(*chain.SEALED_FIELDS)
    }
    connection.ensure_connection()
    import psycopg

    with psycopg.Cursor(connection.connection) as cursor:
        fast = chain_pg._pg_documents(chain_pg._pg_seal_rows(cursor, ids), chain_pg._MinuteCounts())
    assert fast == reference
    assert b'"timestamp":"999-03-04T05:06:07.000089Z"' in fast[ids[0]]

    # And through the sealer: the chain it writes verifies with the reference reader.
    assert chain.chain_seal(sre.agent.pk) == len(ids)
    assert chain.chain_verify(sre.agent).ok


@pytest.mark.parametrize(
    ("raw", "long"),
    [
        (b'{"n": 12345678901234567890}', True),
        (b'{"n": [1, 12345678901234567890]}', True),
        (b'{"n": [12345678901234567890]}', True),
        (b'{"n": -9223372036854775809}', True),
        (b"12345678901234567890", True),
        # Digests hold long runs of decimal digits: not numbers.
        (b'{"id": "sha256:ab1234567890123456789012c"}', False),
        (b'{"id": "x1234567890123456789012"}', False),
        (b'{"n": 123456789012345678}', False),  # 18 digits: orjson reads them exactly
        # In a string after a space: read by json.loads, which reads it the same.
        (b'{"s": "id 1234567890123456789"}', True),
    ],
)
def test_the_sealer_finds_the_raw_texts_with_long_numbers(raw: bytes, long: bool) -> None:
    rows = [(1, b'{"a": "sha256:0123456789012345678901"}'), (7, raw), (9, b'{"n": 1}')]
    rows = [(pk, *(None,) * (chain_pg._RAW - 1), text) for pk, text in rows]
    assert chain_pg._long_number_ids(rows) == ({7} if long else set())


@pytest.mark.postgresql
def test_the_seal_read_uses_the_primary_key_even_without_statistics(client, sre):
    """A partition filled faster than autovacuum analyzes it (or autovacuum off) has no
    statistics; PostgreSQL then scanned the whole partition for the sealer's ids."""
    ingest(client, sre, ["ls", "rm", "audit", "deploy"])
    ids = list(InterceptionRecord.objects.filter(agent=sre.agent).values_list("id", flat=True))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.oid::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'audit_interceptionrecord'::regclass"
        )
        partitions = [row[0] for row in cursor.fetchall()]
        for partition in partitions:
            cursor.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", [partition])
            cursor.execute(
                "UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = %s::regclass",
                [partition],
            )
    assert partitions

    def plan() -> str:
        with connection.cursor() as cursor:
            sql = chain_pg._PG_SEAL_READ_SQL.replace("%s", "'" + chain_pg._pg_id_array(ids) + "'")
            cursor.execute("EXPLAIN " + sql)
            return "\n".join(row[0] for row in cursor.fetchall())

    with transaction.atomic():
        assert (
            "Seq Scan on audit_interceptionrecord" in plan()
        )  # what statistics-less planning does
        transaction.set_rollback(True)
    with transaction.atomic():
        chain_pg.seal_transaction_settings()
        sealing = plan()
        transaction.set_rollback(True)
    assert "Seq Scan on audit_interceptionrecord" not in sealing
    assert "pkey" in sealing


def test_many_pending_batches_are_sealed_in_order_across_transactions(
    client, sre, other, monkeypatch
):
    monkeypatch.setattr(chain, "PENDING_BATCHES_PER_TRANSACTION", 2)
    for calls in (["ls"], ["rm", "audit"], ["deploy"], ["crash", "ls"], ["audit"]):
        ingest(client, sre, calls)
    ingest(client, other, ["ls"])
    pending = [
        pk
        for batch in RecordSealPending.objects.filter(agent=sre.agent).order_by("id")
        for pk in batch.record_ids
    ]
    assert chain.chain_seal(sre.agent.pk) == len(pending)
    seals = list(RecordSeal.objects.filter(agent=sre.agent).order_by("chain_seq"))
    assert [s.record_id for s in seals] == pending  # queue order, one position each
    assert [s.chain_seq for s in seals] == list(range(1, len(pending) + 1))
    assert all(b.chain_prev == a.chain_hash for a, b in zip(seals, seals[1:], strict=False))
    rows = {
        row["id"]: row
        for row in InterceptionRecord.objects.filter(agent=sre.agent).values(*chain.SEALED_FIELDS)
    }
    assert all(s.chain_hash == chain.chain_digest(s.chain_prev, rows[s.record_id]) for s in seals)
    head = ChainHead.objects.get(agent=sre.agent)
    assert (head.last_seq, head.last_hash) == (len(pending), seals[-1].chain_hash)
    assert RecordSealPending.objects.filter(agent=sre.agent).count() == 0
    assert RecordSealPending.objects.filter(agent=other.agent).count() == 1  # not this chain's
    assert chain.chain_seal(sre.agent.pk) == 0


def test_a_record_purged_before_its_seal_is_skipped_not_sealed(client, sre):
    ingest(client, sre, ["ls", "rm"])
    victim = InterceptionRecord.objects.filter(agent=sre.agent).order_by("id")[3]
    victim.delete()
    total = InterceptionRecord.objects.filter(agent=sre.agent).count()
    assert chain.chain_seal(sre.agent.pk) == total
    assert not RecordSeal.objects.filter(record_id=victim.pk).exists()
    assert chain.chain_verify(sre.agent).ok


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_large_backlog_is_read_ahead_on_other_connections_and_sealed_as_one_read_would(
    client, sre, monkeypatch
):
    """Outside any transaction of its caller (as in a worker) a backlog is read in chunks by
    the read-ahead threads, each on its own connection: the seals, their order and the
    rollups are those of the single read, and the readers' connections are handed back
    afterwards."""
    import threading

    monkeypatch.setattr(chain_pg, "READ_AHEAD_CHUNK", 3)
    monkeypatch.setattr(chain_pg, "READ_AHEAD_MIN", 6)
    for calls in (["ls", "rm"], ["audit", "deploy", "crash"], ["rm"]):
        ingest(client, sre, calls)
    pending = [
        pk
        for batch in RecordSealPending.objects.filter(agent=sre.agent).order_by("id")
        for pk in batch.record_ids
    ]
    assert len(pending) > 3 * chain_pg.READ_AHEAD_CHUNK
    readers: list[int] = []
    read = chain_pg._read_ahead_rows

    def spy(ids: list[int]) -> Any:
        readers.append(threading.get_ident())
        return read(ids)

    monkeypatch.setattr(chain_pg, "_read_ahead_rows", spy)
    assert not connection.in_atomic_block
    assert chain.chain_seal(sre.agent.pk) == len(pending)

    assert len(readers) == -(-len(pending) // 3)  # every chunk, none on this thread
    assert threading.get_ident() not in readers
    assert len(set(readers)) == chain_pg.READ_AHEAD_READERS  # reading at once
    seals = list(RecordSeal.objects.filter(agent=sre.agent).order_by("chain_seq"))
    assert [s.record_id for s in seals] == pending
    assert chain.chain_verify(sre.agent).ok
    assert_rollups_match_records()
    assert stored_counts()[1]  # the sessions hold blocked records, counted by hook and reason
    with connection.cursor() as cursor:  # the readers' sessions are not left in use
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state <> 'idle'"
        )
        assert cursor.fetchone()[0] == 0


# Forking a process with threads is the case under test (a prefork worker's parent).
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_starts_its_own_read_ahead_thread():
    """A worker process forked after its parent sealed must not wait on the parent's reader
    thread, which does not exist in the child."""
    import os

    parent = chain_pg._ReadAhead.executor()
    assert parent.submit(lambda: 1).result() == 1
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 only if its own reader answers
        ok = False
        try:
            child = chain_pg._ReadAhead.executor()
            ok = child is not parent and child.submit(lambda: 2).result(timeout=10) == 2
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
