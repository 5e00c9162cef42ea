"""The per-agent hash chain: sealing after ingest, and audit_verify catching tampering."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from audit.chain import chain_seal, chain_verify
from audit.models import ChainHead, InterceptionRecord, RecordSeal, RecordSealPending
from console.celery import app as celery_app
from tests.audit.record_wires import items, sdk_session

pytestmark = pytest.mark.django_db


def ingest(client: Any, agent: Any, calls: list[str]) -> None:
    body = json.dumps(items(sdk_session(calls), tool_name="t"))
    response = client.post(
        "/api/v1/records", data=body, content_type="application/json", **agent.headers()
    )
    assert response.status_code == 202, response.content


def verify(agent_slug: str | None = None) -> tuple[int, str]:
    out = io.StringIO()
    args = ["--agent", agent_slug] if agent_slug else []
    try:
        call_command("audit_verify", *args, stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def sealed(client, sre, other):
    for calls in (["ls", "rm"], ["deploy", "audit", "ls"], ["crash"]):
        ingest(client, sre, calls)
    ingest(client, other, ["ls"])
    chain_seal(sre.agent.pk)
    chain_seal(other.agent.pk)
    return sre


def seals(agent: Any) -> list[RecordSeal]:
    return list(RecordSeal.objects.filter(agent=agent).order_by("chain_seq"))


def test_sealing_chains_every_record_in_order_and_verifies(sealed, other):
    chain = seals(sealed.agent)
    assert [s.chain_seq for s in chain] == list(range(1, 19))
    assert chain[0].chain_prev == "0" * 64
    assert all(b.chain_prev == a.chain_hash for a, b in zip(chain, chain[1:], strict=False))
    assert RecordSealPending.objects.count() == 0
    head = ChainHead.objects.get(agent=sealed.agent)
    assert (head.last_seq, head.last_hash) == (18, chain[-1].chain_hash)
    code, out = verify()
    assert code == 0 and out.strip().endswith("OK 23 records")
    assert "sre-agent: OK 18 records" in out and "other-agent: OK 5 records" in out


def test_sealing_runs_after_the_ingest_commit(client, sre, django_capture_on_commit_callbacks):
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            ingest(client, sre, ["ls"])
    finally:
        celery_app.conf.task_always_eager = eager
    assert len(callbacks) == 1
    assert RecordSeal.objects.filter(agent=sre.agent).count() == 5


def test_the_canonical_form_is_the_documented_stdlib_json(sealed):
    from audit.chain_hash import SEALED_FIELDS, _plain, record_canonical

    values = InterceptionRecord.objects.filter(agent=sealed.agent).values(*SEALED_FIELDS)[0]
    values["reason"] = 'zażółć ✓ "quoted"'
    document = {name: _plain(values[name]) for name in SEALED_FIELDS}
    expected = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record_canonical(values) == expected.encode("utf-8")


def test_an_altered_record_is_reported_first(sealed):
    victim = seals(sealed.agent)[6]
    InterceptionRecord.objects.filter(pk=victim.record_id).update(reason="nothing to see")
    later = seals(sealed.agent)[10]
    record = InterceptionRecord.objects.get(pk=later.record_id)
    record.raw["verdict"]["reason"] = "rewritten"
    record.save(update_fields=["raw"])
    code, out = verify("sre-agent")
    assert code == 1
    assert f"ALTERED record {victim.record_id} at chain_seq 7 no longer matches" in out
    assert chain_verify(sealed.agent).verified == 6


def test_a_deleted_record_is_reported(sealed):
    victim = seals(sealed.agent)[4]
    InterceptionRecord.objects.filter(pk=victim.record_id).delete()
    code, out = verify("sre-agent")
    assert code == 1 and "DELETED chain_seq 5..5 missing" in out


def test_deleting_the_newest_records_is_reported(sealed):
    chain = seals(sealed.agent)
    InterceptionRecord.objects.filter(pk__in=[s.record_id for s in chain[-2:]]).delete()
    code, out = verify("sre-agent")
    assert code == 1 and "DELETED chain_seq 17..18 missing at the end" in out


def test_reordered_records_are_reported(sealed):
    chain = seals(sealed.agent)
    a, b = chain[2], chain[8]
    RecordSeal.objects.filter(pk=a.pk).update(chain_seq=-1)
    RecordSeal.objects.filter(pk=b.pk).update(chain_seq=a.chain_seq)
    RecordSeal.objects.filter(pk=a.pk).update(chain_seq=b.chain_seq)
    report = chain_verify(sealed.agent)
    assert report.problem is not None
    assert (report.problem.kind, report.problem.chain_seq) == ("reordered", 3)
    assert report.problem.record_id == b.record_id
    code, out = verify("sre-agent")
    assert code == 1 and "REORDERED" in out


def test_a_record_slipped_in_outside_the_chain_is_reported(sealed):
    template = InterceptionRecord.objects.filter(agent=sealed.agent).first()
    assert template is not None
    template.pk = None
    template.sequence = 999
    template.save()
    code, out = verify("sre-agent")
    assert code == 1 and f"INSERTED record {template.pk} is neither sealed nor pending" in out


def test_unsealed_pending_records_are_not_failures(client, sre):
    ingest(client, sre, ["ls"])
    code, out = verify("sre-agent")
    assert code == 0 and "5 pending" in out


def test_unknown_agent_is_an_error(db):
    with pytest.raises(Exception, match="No agent"):
        call_command("audit_verify", "--agent", "nobody", stdout=io.StringIO())


@pytest.mark.django_db(transaction=True)
def test_concurrent_sealers_do_not_fork_the_chain(client, sre):
    for _ in range(6):
        ingest(client, sre, ["ls", "rm", "audit"])
    errors: list[BaseException] = []

    def seal() -> None:
        try:
            chain_seal(sre.agent.pk)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=seal) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    chain = seals(sre.agent)
    assert [s.chain_seq for s in chain] == list(range(1, 43))
    assert chain_verify(sre.agent).ok


@pytest.mark.postgresql  # SQLite: the verifier's read transaction holds off the writers
@pytest.mark.django_db(transaction=True)
def test_records_stored_and_sealed_while_a_chain_is_verified_are_no_alarm(client, sre, monkeypatch):
    # Found by a reviewer clicking "Verify chain" during demo traffic: a record ingested
    # between two of the verifier's reads was reported "inserted", and a seal between them
    # would read as "altered". The verifier reads one snapshot, so neither can happen.
    import audit.chain

    ingest(client, sre, ["ls", "rm"])
    chain_seal(sre.agent.pk)
    real_walk = audit.chain._walk

    def busy_walk(agent: Any, head: Any) -> Any:
        def traffic() -> None:
            try:
                ingest(Client(), sre, ["deploy"])  # stored, pending
                chain_seal(sre.agent.pk)  # and sealed: the head moves on
                ingest(Client(), sre, ["audit"])  # stored, pending
            finally:
                connection.close()

        thread = threading.Thread(target=traffic)
        thread.start()
        thread.join(timeout=60)
        return real_walk(agent, head)

    monkeypatch.setattr(audit.chain, "_walk", busy_walk)
    report = chain_verify(sre.agent)
    assert report.problem is None, report.problem
    monkeypatch.undo()
    assert InterceptionRecord.objects.filter(agent=sre.agent).count() == 6 + 5 + 5
    assert chain_verify(sre.agent).ok
