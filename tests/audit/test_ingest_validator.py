"""The record validator: the SDK's own schema, and the compiled accelerator agreeing with it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from audit import ingest, record_rows
from tests.audit.record_wires import FAILURE_PATHS, sdk_failure_session, sdk_session


def corpus() -> list[tuple[dict[str, Any], bool]]:
    valid = sdk_session(["ls", "audit", "rm", "redact", "crash", "deploy"])
    valid += sdk_session(["deploy"], approval="expire")
    valid += [sdk_failure_session(path)[1] for path in FAILURE_PATHS]
    cases: list[tuple[dict[str, Any], bool]] = [(wire, True) for wire in valid]
    base = valid[4]
    mutations = [
        lambda r: r.update(context={"x": 1}),
        lambda r: r.update(target="payload"),
        lambda r: r.pop("verdict"),
        lambda r: r.update(sequence=1.5),
        lambda r: r.update(sequence=2**64),
        lambda r: r.update(interception_point="pre_everything"),
        lambda r: r.update(mode="relaxed"),
        lambda r: r.update(identity_provider="JCS"),
        lambda r: r.update(identity_provider=None),
        lambda r: r["verdict"].update(decision="warn"),
        lambda r: r["verdict"].pop("decision"),
        lambda r: r["verdict"].update(transform={"path": "$target.x", "value": "secret"}),
        lambda r: r["verdict"].update(approval={"args": {"x": 1}}),
        lambda r: r["verdict"].update(message="m" * 258),
        lambda r: r["verdict"].update(evidence={"args": {"password": "hunter2"}}),
        lambda r: r["verdict"].update(evidence={"artefact": {"password": "hunter2"}}),
        lambda r: r["verdict"].update(evidence={"verification_pointers": {"log": {"x": 1}}}),
        lambda r: r["verdict"].update(evidence={"artefact": "a" * 2049}),
        lambda r: r["verdict"].update(reason="r" * 1025),
        lambda r: r["verdict"].update(result_labels=["l" * 257]),
        lambda r: r["verdict"].update(result_labels=["l"] * 257),
        lambda r: r["verdict"].update(warnings=[{"reason": "w" * 1025}]),
        lambda r: r["verdicts"][0].update(reason="r" * 1025),
        lambda r: r.update(trace={"trace_id": "t" * 257}),
        lambda r: r.update(identity_provider="p" * 65),
        lambda r: r.update(input_identity="i" * 201),
        lambda r: r["composition"].update(profile="random"),
        lambda r: r.update(resolved_by="maybe"),
        lambda r: r.update(decided_by=-1),
        lambda r: r.update(session_id="s" * 201),
        lambda r: r.update(declaration="agent-hooks-declaration/one"),
        lambda r: r.update(verdicts=[{"index": 0, "decision": "allow", "args": {}}]),
        lambda r: r.update(trace={"trace_id": "t", "baggage": "x"}),
        lambda r: r.update(interceptors_registered=2**70),
        lambda r: r.update(verdicts=[{"index": 2**40, "decision": "allow"}]),
    ]
    for mutate in mutations:
        record = copy.deepcopy(base)
        mutate(record)
        cases.append((record, False))
    return cases


def test_the_schema_is_the_sdks_own_file():
    documents = ingest._schema_documents()
    path = ingest.SCHEMA_DIR / ingest.RECORD_SCHEMA_FILE
    assert documents[ingest.RECORD_SCHEMA_FILE] == json.loads(path.read_text())
    assert "agent_hooks" in str(path)
    # The one difference (host-error records, tests/audit/test_ingest_failed_runs.py).
    assert ingest._record_document()["$id"] == documents[ingest.RECORD_SCHEMA_FILE]["$id"]


@pytest.mark.parametrize(("record", "valid"), corpus())
def test_reference_and_accelerator_agree(record, valid):
    reference = ingest.record_validator().is_valid(record)
    fast = ingest.record_fast_validator()
    assert reference is valid
    assert fast is None or fast.is_valid(record) is valid
    assert (ingest.record_errors(record) == []) is valid


def test_validators_are_compiled_once_per_process():
    assert ingest.record_validator() is ingest.record_validator()
    assert ingest.record_fast_validator() is ingest.record_fast_validator()


def test_errors_point_at_the_offending_member():
    record = sdk_session(["ls"])[0]
    record["verdict"]["decision"] = "warn"
    [(pointer, message)] = ingest.record_errors(record)
    assert pointer == "/verdict/decision"
    assert message == 'must be one of: "allow", "deny", "transform".'


@pytest.mark.parametrize(
    ("mutate", "pointer"),
    [
        (lambda r: r["verdict"].update(reason="SECRET" * 40_000), "/verdict/reason"),
        (lambda r: r.update(session_id=["SECRET"] * 1000), "/session_id"),
        (lambda r: r.update(mode="SECRET" * 1000), "/mode"),
        (lambda r: r.update(identity_provider="SECRET" * 1000), "/identity_provider"),
        (lambda r: r["verdict"].update(evidence={"artefact": {"pw": "SECRET"}}), None),
    ],
)
def test_error_messages_do_not_repeat_the_refused_value(mutate, pointer):
    record = sdk_session(["ls"])[0]
    mutate(record)
    [(at, message)] = ingest.record_errors(record)
    assert pointer is None or at == pointer
    assert "SECRET" not in message and len(message) <= 200


def item_cases() -> list[Any]:
    """Items around the record: the corpus's records with good and bad meta and item keys,
    stamps and strings PostgreSQL cannot store."""
    good = sdk_session(["ls"])[2]
    cases: list[Any] = [{"record": record, "meta": {"tool_name": "t"}} for record, _ in corpus()]
    metas: list[Any] = [
        None,
        {},
        {"revision": 3, "framework": "f", "custom_agent": None},
        {"revision": True},
        {"revision": 3.0},
        {"tool_name": 5},
        {"tool_name": "x" * 201},
        {"tool_name": "nul\x00"},
        {"arguments": "secret"},
        "meta",
    ]
    cases += [{"record": good, "meta": meta} for meta in metas]
    cases += [{"record": good}, {"record": good, "extra": 1}, {"meta": {}}, [good], None]
    cases += [{"record": None}, {"record": {**good, "reason_x": 1}}]
    for stamp in ("2026-01-01T00:00:00+15:00", "2026-01-01T00:00:00", "yesterday", None):
        cases.append({"record": {**good, "timestamp": stamp}})
    cases.append({"record": {**good, "session_id": "nul\x00"}})
    cases.append({"record": {**good, "session_id": "lone \ud800"}})
    return cases


@pytest.mark.parametrize("item", item_cases())
def test_the_hot_path_accepts_exactly_what_the_full_checks_accept(item):
    # batch_items takes an item from `_accepted_item`; `_item_errors` (which names the
    # field) runs only when that refuses. Neither may accept what the other refuses.
    valid = ingest._accepted_item(item, True)
    assert (valid is not None) is (ingest._item_errors(0, item, True) == [])
    if valid is not None:
        assert valid.row() == record_rows.row_from_item(item["record"], item.get("meta"))
