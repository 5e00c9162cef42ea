"""POST /api/v1/records: payload-free means bounded. Every string of the record wire has a
documented limit (audit.ingest.RECORD_LIMITS), `verdict.evidence` has the SDK's shape only,
and a record over a limit is refused whole, named by pointer, without echoing the value."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from agent_hooks import AgentContextBuilder, InterceptionEmitter, Verdict

from agents.models import Hook
from audit.ingest import RECORD_LIMITS
from audit.models import InterceptionRecord, RecordSealPending
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import items, sdk_session

URL = "/api/v1/records"
pytestmark = pytest.mark.django_db
BIG = "SECRET-" + "x" * 200_000
Mutation = Callable[[dict[str, Any]], None]


def post(client, body: Any, headers: dict[str, str]) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json", **headers)


def _verdict(**members: Any) -> Mutation:
    return lambda record: record["verdict"].update(members)


REFUSED: list[tuple[str, Mutation, str]] = [
    (
        "evidence carrying tool arguments",
        _verdict(evidence={"args": {"command": "rm -rf /", "password": "hunter2"}}),
        "/verdict/evidence/args",
    ),
    (
        "evidence artefact that is an object",
        _verdict(evidence={"artefact": {"password": "hunter2"}}),
        "/verdict/evidence/artefact",
    ),
    (
        "evidence pointer that is an object",
        _verdict(evidence={"verification_pointers": {"log": {"password": "hunter2"}}}),
        "/verdict/evidence/verification_pointers/log",
    ),
    ("evidence that is not an object", _verdict(evidence="hunter2"), "/verdict/evidence"),
    (
        "a 200 KB evidence artefact",
        _verdict(evidence={"artefact": BIG}),
        "/verdict/evidence/artefact",
    ),
    (
        "too many evidence pointers",
        _verdict(evidence={"verification_pointers": {f"p{i}": "https://x" for i in range(33)}}),
        "/verdict/evidence/verification_pointers",
    ),
    ("a 200 KB verdict reason", _verdict(reason=BIG), "/verdict/reason"),
    ("a 200 KB warning reason", _verdict(warnings=[{"reason": BIG}]), "/verdict/warnings/0/reason"),
    (
        "a 200 KB verdicts[].reason",
        lambda r: r["verdicts"][0].update(reason=BIG),
        "/verdicts/0/reason",
    ),
    ("a 200 KB trace id", lambda r: r.update(trace={"trace_id": BIG}), "/trace/trace_id"),
    ("a 200 KB span id", lambda r: r.update(trace={"span_id": BIG}), "/trace/span_id"),
    (
        "a 200 KB transform path",
        _verdict(decision="transform", transform={"path": "$target." + BIG}),
        "/verdict/transform/path",
    ),
    ("a 200 KB result label", _verdict(result_labels=[BIG]), "/verdict/result_labels/0"),
    ("too many result labels", _verdict(result_labels=["pii"] * 257), "/verdict/result_labels"),
    (
        "a 200 KB identity provider",
        lambda r: r.update(identity_provider="p" * 200_000),
        "/identity_provider",
    ),
    ("a 200 KB hook name", lambda r: r["verdicts"][0].update(name=BIG), "/verdicts/0/name"),
]


@pytest.mark.parametrize(
    ("mutate", "pointer"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_an_unbounded_or_payload_member_is_refused_and_nothing_is_stored(
    client, sre, mutate, pointer
):
    batch = items(sdk_session(["ls"]))
    mutate(batch[3]["record"])
    events = GovernanceEvent.objects.count()
    response = post(client, batch, sre.headers())
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert list(error["fields"]) == [f"/3/record{pointer}"]
    assert "Nothing of this batch was stored" in error["message"]
    # The refusal names the field; it never repeats the refused value.
    assert b"SECRET" not in response.content and b"hunter2" not in response.content
    assert len(response.content) < 2000
    assert InterceptionRecord.objects.count() == 0 and RecordSealPending.objects.count() == 0
    assert GovernanceEvent.objects.count() == events


@pytest.mark.parametrize(
    ("member", "limit", "place"),
    [
        ("reason", RECORD_LIMITS["reason"], lambda r, v: r["verdict"].update(reason=v)),
        ("trace_id", RECORD_LIMITS["trace_id"], lambda r, v: r.update(trace={"trace_id": v})),
        ("label", RECORD_LIMITS["label"], lambda r, v: r["verdict"].update(result_labels=[v])),
        ("session_id", RECORD_LIMITS["session_id"], lambda r, v: r.update(session_id=v)),
        ("hook_name", RECORD_LIMITS["hook_name"], lambda r, v: r["verdicts"][0].update(name=v)),
    ],
)
def test_each_limit_is_inclusive(client, sre, member, limit, place):
    at_limit, over = items(sdk_session(["ls"])), items(sdk_session(["ls"]))
    place(at_limit[3]["record"], "a" * limit)
    place(over[3]["record"], "a" * (limit + 1))
    assert post(client, at_limit, sre.headers()).status_code == 202
    refused = post(client, over, sre.headers())
    assert refused.status_code == 400
    assert f"at most {limit} characters" in json.dumps(refused.json())


class _Attesting:
    """An interceptor returning what the SDK documents for evidence and a long message:
    the SDK's own record of it must be accepted."""

    def intercept(self, context: dict[str, Any]) -> Verdict:
        return Verdict.from_wire(
            {
                "decision": "deny",
                "reason": "attested_deny",
                "message": "m" * 1000,
                "evidence": {
                    "artefact": "sha256:" + "ab" * 32,
                    "verification_pointers": {"rekor": "https://rekor.example/entries/1"},
                },
            }
        )


async def _attested_wires() -> list[dict[str, Any]]:
    emitter = InterceptionEmitter()
    emitter.register(_Attesting(), name="hk_attest01")
    emitter.set_record_sink(lambda record: wires.append(record.to_wire()))
    wires: list[dict[str, Any]] = []
    builder = AgentContextBuilder(agent_id="sre-agent", framework="f", session_id="s-attest")
    await emitter.emit_unchecked(builder.input(content="hello"))
    return wires


def test_the_sdks_own_evidence_and_truncated_message_are_accepted(client, sre):
    # The message is kept only for a hook of this agent opted in to "record its reason".
    Hook.objects.create(
        agent=sre.agent,
        key="hk_attest01",
        name="attest",
        event="PreToolUse",
        definition={"type": "command", "command": "exit 0"},
        record_reason=True,
    )
    [wire] = asyncio.run(_attested_wires())
    assert wire["verdict"]["evidence"]["artefact"].startswith("sha256:")
    assert len(wire["verdict"]["message"]) == 257  # 256 bytes + "…"
    response = post(client, items([wire]), sre.headers())
    assert response.status_code == 202, response.content
    assert InterceptionRecord.objects.get().raw == wire


@pytest.mark.parametrize(
    "stamp",
    [
        "0001-01-01T00:00:00+14:00",  # year 0 in UTC
        "9999-12-31T23:59:59-14:00",  # year 10000 in UTC
        "2026-01-01T00:00:00+23:59",  # an offset PostgreSQL refuses
        "2026-11-30T06:51:49",  # no offset
    ],
)
def test_a_timestamp_that_could_not_be_stored_or_read_back_is_refused(
    client, sre, auditor_client, stamp
):
    batch = items(sdk_session(["ls"]))
    batch[0]["record"]["timestamp"] = stamp
    response = post(client, batch, sre.headers())
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/0/record/timestamp"]
    assert auditor_client.get("/api/v1/records?agent=sre-agent").status_code == 200


def test_a_timestamp_at_the_edges_is_stored_and_searchable(client, sre, auditor_client):
    batch = items(sdk_session(["ls"]))
    batch[0]["record"]["timestamp"] = "0001-01-01T14:00:00+14:00"
    batch[1]["record"]["timestamp"] = "9999-12-31T09:59:59-14:00"
    assert post(client, batch, sre.headers()).status_code == 202
    found = auditor_client.get("/api/v1/records?agent=sre-agent")
    assert found.status_code == 200 and len(found.json()["results"]) == 5
    assert auditor_client.get("/audit/?agent=sre-agent").status_code == 200
