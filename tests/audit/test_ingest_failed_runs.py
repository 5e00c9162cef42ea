"""POST /api/v1/records stores the records the SDK emits when a run fails: every failure
path of the SDK's emitter, under the composition the console declares (sequential/run_all),
with the derived columns of a host error."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import referencing
from referencing.jsonschema import DRAFT202012

from audit import ingest
from audit.models import InterceptionRecord
from tests.audit.record_wires import FAILURE_PATHS, items, sdk_failure_session

URL = "/api/v1/records"
pytestmark = pytest.mark.django_db

# path → (reason, decided_by, hook the failure is attributed to, hooks named on the record)
EXPECTED: dict[str, tuple[str, int | None, str, list[str]]] = {
    "cancelled_awaiting_reviewer": ("host_error:interceptor_failed", None, "", []),
    "cancelled_in_hook": ("host_error:interceptor_failed", None, "", []),
    "interceptor_failed": (
        "host_error:interceptor_failed",
        1,
        "hk_fail0000",
        ["console-base", "hk_fail0000"],
    ),
    "interceptor_timeout": (
        "host_error:interceptor_timeout",
        1,
        "hk_fail0000",
        ["console-base", "hk_fail0000"],
    ),
    "verdict_invalid": (
        "host_error:verdict_invalid",
        1,
        "hk_fail0000",
        ["console-base", "hk_fail0000"],
    ),
    "resolver_failed": (
        "host_error:approval_resolver_failed",
        None,
        "",
        ["console-base", "hk_fail0000"],
    ),
    "resolver_timeout": (
        "host_error:approval_resolver_failed",
        None,
        "",
        ["console-base", "hk_fail0000"],
    ),
    "context_invalid": ("host_error:context_invalid", None, "", []),
    "host_failure": ("host_error:context_invalid", None, "", []),
    "no_interceptor": ("host_error:no_interceptor", None, "", []),
}


def post(client, body: Any, headers: dict[str, str]) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json", **headers)


@pytest.mark.parametrize("path", FAILURE_PATHS)
def test_every_failure_path_of_the_sdk_is_stored_with_host_error_columns(client, sre, path):
    wires = sdk_failure_session(path)
    response = post(client, items(wires, tool_name="restart"), sre.headers())
    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": 3, "duplicates": 0}
    stored = InterceptionRecord.objects.get(agent=sre.agent, sequence=1)
    reason, decided_by, decided_hook, hook_ids = EXPECTED[path]
    assert stored.interception_point == "pre_tool_call"
    assert (stored.outcome, stored.decision, stored.reason) == ("host_error", "deny", reason)
    assert (stored.decided_by, stored.decided_hook, stored.hook_ids) == (
        decided_by,
        decided_hook,
        hook_ids,
    )
    assert stored.raw == wires[1] and stored.tool_name == "restart"
    shutdown = InterceptionRecord.objects.get(agent=sre.agent, interception_point="agent_shutdown")
    assert shutdown.outcome == "allowed"


def _sdk_file_validator() -> jsonschema.Draft202012Validator:
    documents = ingest._schema_documents()
    resources = [
        (doc["$id"], referencing.Resource.from_contents(doc, default_specification=DRAFT202012))
        for doc in documents.values()
    ]
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
    sdk_id = documents[ingest.RECORD_SCHEMA_FILE]["$id"]
    return jsonschema.Draft202012Validator({"$ref": sdk_id}, registry=registry)


def test_the_records_without_verdicts_are_those_the_sdk_file_would_refuse():
    """The SDK's schema file requires `verdicts` under run_all; its emitter omits them when
    no interceptor finished. Those records fail the file and pass the console."""
    sdk_file = _sdk_file_validator()
    without = []
    for path in FAILURE_PATHS:
        record = sdk_failure_session(path)[1]
        assert record["composition"]["profile"] == "sequential/run_all"
        assert ingest.record_errors(record) == []
        if "verdicts" not in record:
            without.append(path)
            [error] = sdk_file.iter_errors(record)
            assert error.validator == "required" and error.validator_value == ["verdicts"]
        else:
            assert sdk_file.is_valid(record)
    assert without == [
        "cancelled_awaiting_reviewer",
        "cancelled_in_hook",
        "context_invalid",
        "host_failure",
        "no_interceptor",
    ]


def test_a_record_that_is_not_a_host_error_still_needs_its_verdicts(client, sre):
    wires = sdk_failure_session("interceptor_failed")
    shutdown = copy.deepcopy(wires[2])
    del shutdown["verdicts"]
    response = post(client, items([wires[0], shutdown]), sre.headers())
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/1/record/verdicts"]
    assert InterceptionRecord.objects.count() == 0


def test_only_the_sdk_rule_for_host_errors_differs_from_the_sdk_file():
    sdk = ingest._schema_documents()[ingest.RECORD_SCHEMA_FILE]
    console = copy.deepcopy(ingest._record_document())
    rule = next(r for r in console["allOf"] if r.get("then") == {"required": ["verdicts"]})
    assert rule["if"]["properties"].pop("verdict") == ingest._NOT_HOST_SYNTHESIZED
    assert console == sdk
