"""Two requests storing the same record at once: each key is stored once, counts add up."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest
from django.db import connection

from audit.models import InterceptionRecord
from tests.audit.record_wires import items, sdk_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]


def test_a_key_committed_by_a_concurrent_writer_mid_batch_is_counted_as_duplicate(client, sre):
    batch = items(sdk_session(["ls", "rm"]))
    first = batch[2]["record"]
    s = connection.settings_dict
    info = {"dbname": s["NAME"], "user": s["USER"], "host": s["HOST"], "port": s["PORT"]}
    other = psycopg.connect(**{k: v for k, v in info.items() if v})
    # The other writer holds one of the batch's keys uncommitted: our duplicate check
    # cannot see it, our COPY then waits on the unique index until it commits.
    other.execute(
        "INSERT INTO audit_interceptionrecord (agent_id, custom_agent, session_id, sequence, "
        "interception_point, mode, decision, outcome, reason, resolved_by, decided_hook, "
        "input_identity, enforced_identity, timestamp, received_at, hook_ids, tool_name, "
        "framework, revision, raw) VALUES (%s, '', %s, %s, 'input', 'enforce', 'allow', "
        "'allowed', '', '', '', '', '', %s, now(), '{}', '', '', '', %s::jsonb)",
        [
            sre.agent.pk,
            first["session_id"],
            first["sequence"],
            first["timestamp"],  # the same record: the same key, its timestamp included
            json.dumps(first),
        ],
    )
    committer = threading.Timer(0.5, other.commit)
    committer.start()
    began = time.monotonic()
    response = client.post(
        "/api/v1/records", data=json.dumps(batch), content_type="application/json", **sre.headers()
    )
    committer.join()
    other.close()
    assert time.monotonic() - began >= 0.4  # it really waited for the other writer
    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": len(batch) - 1, "duplicates": 1}
    assert InterceptionRecord.objects.count() == len(batch)


def test_a_record_without_timestamp_stored_by_a_concurrent_writer_is_a_duplicate(client, sre):
    """Such a record gets its received time, so the unique index (which holds the
    timestamp) cannot catch its replay: ingest looks it up, one writer of the agent's
    untimed records at a time (audit.partitions.untimed_replays_dropped)."""
    from audit.partitions import _UNTIMED_LOCK

    batch = items(sdk_session(["ls", "rm"]))
    for item in batch:
        del item["record"]["timestamp"]
    first = batch[2]["record"]
    s = connection.settings_dict
    info = {"dbname": s["NAME"], "user": s["USER"], "host": s["HOST"], "port": s["PORT"]}
    other = psycopg.connect(**{k: v for k, v in info.items() if v})
    # The other writer is mid-ingest of the same untimed record: it holds the agent's
    # lock and its row, stored with another received time, is not committed yet.
    other.execute("SELECT pg_advisory_xact_lock(%s)", [_UNTIMED_LOCK | sre.agent.pk])
    other.execute(
        "INSERT INTO audit_interceptionrecord (agent_id, custom_agent, session_id, sequence, "
        "interception_point, mode, decision, outcome, reason, resolved_by, decided_hook, "
        "input_identity, enforced_identity, timestamp, received_at, hook_ids, tool_name, "
        "framework, revision, raw) VALUES (%s, '', %s, %s, 'input', 'enforce', 'allow', "
        "'allowed', '', '', '', '', '', now() - interval '1 hour', now(), '{}', '', '', '', "
        "%s::jsonb)",
        [sre.agent.pk, first["session_id"], first["sequence"], json.dumps(first)],
    )
    committer = threading.Timer(0.5, other.commit)
    committer.start()
    began = time.monotonic()
    response = client.post(
        "/api/v1/records", data=json.dumps(batch), content_type="application/json", **sre.headers()
    )
    committer.join()
    other.close()
    assert time.monotonic() - began >= 0.4  # it waited for the other writer's lock
    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": len(batch) - 1, "duplicates": 1}
    assert InterceptionRecord.objects.count() == len(batch)
