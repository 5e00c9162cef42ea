"""POST /api/v1/records: schema-checked, all-or-nothing, idempotent, attributed to the token."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from audit.models import InterceptionRecord, RecordSealPending
from tests.audit.record_wires import items, sdk_session, tool_items

URL = "/api/v1/records"
pytestmark = pytest.mark.django_db


def post(client: Client, body: Any, headers: dict[str, str]) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json", **headers)


@pytest.fixture(scope="module")
def session_items() -> list[dict[str, Any]]:
    return tool_items(["ls", "audit", "rm", "redact", "crash", "deploy"])


def test_valid_batch_is_stored_and_acknowledged_with_counts(client, sre, session_items):
    response = post(client, session_items, sre.headers())
    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": len(session_items), "duplicates": 0}
    stored = InterceptionRecord.objects.filter(agent=sre.agent).order_by("sequence")
    assert [r.sequence for r in stored] == list(range(len(session_items)))
    assert RecordSealPending.objects.filter(agent=sre.agent).count() == 1


def test_replay_counts_duplicates_and_stores_nothing_twice(client, sre, session_items):
    assert post(client, session_items, sre.headers()).json()["accepted"] == len(session_items)
    again = post(client, session_items, sre.headers())
    assert again.status_code == 202
    assert again.json() == {"accepted": 0, "duplicates": len(session_items)}
    mixed = session_items[:3] + tool_items(["ls"])
    assert post(client, mixed, sre.headers()).json() == {"accepted": 5, "duplicates": 3}
    assert InterceptionRecord.objects.count() == len(session_items) + 5


def test_same_key_twice_in_one_batch_is_one_record(client, sre):
    batch = items(sdk_session(["ls"]))
    response = post(client, batch + batch[:2], sre.headers())
    assert response.json() == {"accepted": len(batch), "duplicates": 2}


def test_derived_columns_come_from_the_record_and_meta(client, sre, session_items):
    post(client, session_items, sre.headers())
    by_tool = {r.tool_name: r for r in InterceptionRecord.objects.exclude(tool_name="")}
    assert {name: r.outcome for name, r in by_tool.items()} == {
        "ls": "allowed",
        "audit": "warned",
        "rm": "denied",
        "redact": "transformed",
        "crash": "host_error",
        "deploy": "approved",
    }
    rm = by_tool["rm"]
    assert (rm.decision, rm.reason, rm.decided_by, rm.decided_hook) == (
        "deny",
        "dangerous_command",
        0,
        "hk_guard0001",
    )
    assert rm.hook_ids == ["hk_guard0001"] and rm.fold_truncated is True
    assert by_tool["deploy"].resolved_by == "approval"
    assert by_tool["crash"].reason == "host_error:interceptor_failed"
    assert rm.framework == "agent_framework" and rm.revision == "3"
    assert rm.input_identity.startswith("sha256:") and rm.mode == "enforce"
    posted = next(i["record"] for i in session_items if i["meta"].get("tool_name") == "rm")
    # Stored as posted, but for the hook's message: hk_guard0001 did not opt in to record
    # its reason, so the console strips it (docs/audit-storage.md, "Recorded reasons").
    assert posted["verdict"].get("message")
    assert rm.raw == {
        **posted,
        "verdict": {k: v for k, v in posted["verdict"].items() if k != "message"},
    }
    assert rm.timestamp.isoformat().startswith(rm.raw["timestamp"][:19])


@pytest.mark.parametrize(("approval", "outcome"), [("reject", "rejected"), ("expire", "expired")])
def test_reviewer_rejection_and_expiry_are_their_own_outcomes(client, sre, approval, outcome):
    post(client, tool_items(["deploy"], approval=approval), sre.headers())
    record = InterceptionRecord.objects.get(tool_name="deploy")
    assert (record.outcome, record.resolved_by, record.decision) == (outcome, "rejection", "deny")


def test_records_are_attributed_to_the_tokens_agent_whatever_the_body_says(client, sre, other):
    batch = items(sdk_session(["ls"]), custom_agent="triage")
    batch[0]["record"]["agent"] = other.agent.slug  # an unknown member: refused outright
    assert post(client, batch, sre.headers()).status_code == 400
    batch = items(sdk_session(["ls"]), custom_agent="triage")
    assert post(client, batch, other.headers()).status_code == 202
    assert set(InterceptionRecord.objects.values_list("agent__slug", flat=True)) == {"other-agent"}
    assert set(InterceptionRecord.objects.values_list("custom_agent", flat=True)) == {"triage"}


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("context", {"messages": [{"role": "user", "content": "secret"}]}),
        ("target", {"command": "rm -rf /"}),
        ("args", {"password": "hunter2"}),
        ("tool_result", "the file content"),
    ],
)
def test_record_carrying_payload_is_refused_and_nothing_of_the_batch_stored(
    client, sre, member, value
):
    batch = items(sdk_session(["ls", "rm"]))
    batch[3]["record"][member] = value
    response = post(client, batch, sre.headers())
    assert response.status_code == 400
    error = response.json()["error"]
    assert f"/3/record/{member}" in error["fields"]
    assert "Item 3" in error["message"] and "Nothing of this batch was stored" in error["message"]
    assert InterceptionRecord.objects.count() == 0


def test_payload_inside_the_verdict_is_refused(client, sre):
    batch = items(sdk_session(["ls"]))
    batch[1]["record"]["verdict"]["args"] = {"token": "x"}
    response = post(client, batch, sre.headers())
    assert response.status_code == 400
    assert "/1/record/verdict/args" in response.json()["error"]["fields"]
    batch = items(sdk_session(["ls"]))
    batch[1]["record"]["verdict"]["message"] = "x" * 5000
    assert (
        "/1/record/verdict/message" in post(client, batch, sre.headers()).json()["error"]["fields"]
    )


def test_missing_verdict_and_wrong_types_are_named_by_pointer(client, sre):
    batch = items(sdk_session(["ls"]))
    del batch[3]["record"]["verdict"]
    batch[0]["record"]["sequence"] = "zero"
    response = post(client, batch, sre.headers())
    fields = response.json()["error"]["fields"]
    assert set(fields) == {"/0/record/sequence", "/3/record/verdict"}
    assert InterceptionRecord.objects.count() == 0


def test_meta_with_an_unknown_key_is_refused(client, sre):
    batch = items(sdk_session(["ls"]), tool_name="ls")
    batch[0]["meta"]["arguments"] = {"path": "/etc/shadow"}
    response = post(client, batch, sre.headers())
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/0/meta/arguments"]
    assert InterceptionRecord.objects.count() == 0


def test_unknown_item_key_and_non_object_items_are_refused(client, sre):
    batch: list[Any] = items(sdk_session(["ls"]))
    batch[1]["payload"] = "x"
    batch.append("not an item")
    fields = post(client, batch, sre.headers()).json()["error"]["fields"]
    assert set(fields) == {"/1/payload", f"/{len(batch) - 1}"}


def test_strings_postgresql_cannot_store_are_refused_not_500(client, sre):
    batch = items(sdk_session(["ls"]))
    batch[2]["record"]["session_id"] = "abc\u0000def"
    response = post(client, batch, sre.headers())
    assert response.status_code == 400
    assert "/2/record/session_id" in response.json()["error"]["fields"]
    raw = json.dumps(items(sdk_session(["ls"]), tool_name="x")).replace('"x"', '"\\ud800"')
    response = client.post(URL, data=raw, content_type="application/json", **sre.headers())
    assert response.status_code == 400 and "/0/meta/tool_name" in response.json()["error"]["fields"]


def test_integers_past_64_bits_are_refused_by_field(client, sre):
    raw = json.dumps(items(sdk_session(["ls"]))).replace(
        '"interceptors_registered": 2',
        '"interceptors_registered": 123456789012345678901234567890',
        1,
    )
    response = client.post(URL, data=raw, content_type="application/json", **sre.headers())
    assert response.status_code == 400
    assert "/0/record/interceptors_registered" in response.json()["error"]["fields"]


def test_unparseable_timestamp_is_refused(client, sre):
    batch = items(sdk_session(["ls"]))
    batch[0]["record"]["timestamp"] = "yesterday"
    assert "/0/record/timestamp" in post(client, batch, sre.headers()).json()["error"]["fields"]


def test_batch_shape_limits(client, sre):
    assert post(client, {"record": {}}, sre.headers()).status_code == 400
    assert post(client, [], sre.headers()).status_code == 400
    too_many = [{"record": {}}] * 1001
    response = post(client, too_many, sre.headers())
    assert response.status_code == 400 and "1001" in response.json()["error"]["message"]
    malformed = client.post(URL, data="[{", content_type="application/json", **sre.headers())
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "malformed"
    nan = client.post(URL, data="[NaN]", content_type="application/json", **sre.headers())
    assert nan.status_code == 400


def test_a_full_batch_of_1000_is_accepted(client, sre):
    batch = []
    while len(batch) < 1000:
        batch += items(sdk_session(["ls", "rm", "audit"] * 5))
    response = post(client, batch[:1000], sre.headers())
    assert response.json() == {"accepted": 1000, "duplicates": 0}
    # Every row of every COPY chunk is stored, each under an id its seal-queue row names.
    stored = InterceptionRecord.objects.filter(agent=sre.agent)
    assert sorted(stored.values_list("sequence", flat=True)) == sorted(
        item["record"]["sequence"] for item in batch[:1000]
    )
    (pending,) = RecordSealPending.objects.filter(agent=sre.agent)
    assert pending.record_ids == sorted(stored.values_list("id", flat=True))


@pytest.mark.parametrize(
    "who", ["admin_client", "auditor_client", "reviewer_client", "outsider_client"]
)
def test_only_agent_tokens_may_write(request, who, session_items):
    client = request.getfixturevalue(who)
    response = client.post(URL, data=json.dumps(session_items), content_type="application/json")
    assert response.status_code == 403
    assert InterceptionRecord.objects.count() == 0


def test_anonymous_and_bad_tokens_are_refused(client, session_items):
    assert post(client, session_items, {}).status_code in (401, 403)
    bad = {"HTTP_AUTHORIZATION": "Bearer agt_nope"}
    assert post(client, session_items, bad).status_code == 401
