"""API fuzzing: schemathesis against the drf-spectacular schema, every operation × four
roles, in process through the WSGI application.

Each operation gets FUZZ_EXAMPLES generated requests per role (derandomized: the same
requests on every run), half of them aimed at sre-agent's real objects (its custom agent,
its pending escalation, `?agent=sre-agent`) so that the success paths are fuzzed too, not
only 404s. Every response must pass `not_a_server_error` and
`response_schema_conformance` (the body matches the schema documented for its status code,
4xx error bodies included). Each request runs in a transaction that is rolled back, so
every example starts from the same world.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup, ServerError
from schemathesis.generation.modes import GenerationMode
from schemathesis.openapi.checks import JsonSchemaError
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.security.world import CUSTOM, SRE, World

pytestmark = pytest.mark.django_db

# CI runs 20 per operation and role; CONSOLE_FUZZ_EXAMPLES=300 is a deeper local run.
FUZZ_EXAMPLES = int(os.environ.get("CONSOLE_FUZZ_EXAMPLES", "20"))
MAX_WAIT = 0.05
ROLES = ("pat_admin", "pat_rev", "pat_auditor", "agent")


def generated_schema() -> dict[str, Any]:
    """The document /api/schema/ serves (the test below checks they are the same)."""
    return json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True)))


class _ClosingResponse:
    def __init__(self, response: Any) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.response)

    def close(self) -> None:
        request_finished.disconnect(close_old_connections)
        try:
            self.response.close()
        finally:
            request_finished.connect(close_old_connections)


class InProcessWSGI(WSGIHandler):
    """The WSGI application as Django's test client runs it: a request must not close the
    test's database connection (it holds the transaction each example is rolled back in)."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request_started.disconnect(close_old_connections)
        try:
            response = super().__call__(environ, start_response)
        finally:
            request_started.connect(close_old_connections)
        return _ClosingResponse(response)


SCHEMA = schemathesis.openapi.from_dict(generated_schema())
SCHEMA.app = InProcessWSGI()
OPERATIONS = {op.label: op for op in (result.ok() for result in SCHEMA.get_all_operations())}


def _aim_at_sre(world: World, case: Any) -> Any:
    """Point the generated request at sre-agent's real objects."""
    params = case.path_parameters or {}
    if "name" in params:
        params["name"] = CUSTOM
    if "export_id" in params:
        params["export_id"] = str(world.export.pk)
    for key in ("id", "pk"):
        if key in params:
            params[key] = str(world.escalation.pk)
    if case.query is not None and "agent" in case.query:
        case.query["agent"] = SRE
    return case


def _bounded_wait(case: Any) -> Any:
    """The long-poll really waits: keep each example's wait short."""
    if case.query and "wait" in case.query:
        try:
            wait = float(case.query["wait"])
        except (TypeError, ValueError):
            return case
        if wait > MAX_WAIT:
            case.query["wait"] = MAX_WAIT
    return case


# Operation label -> the roles whose fuzzing must reach a 2xx at least once (so the success
# paths and their response schemas are exercised, not only refusals).
MUST_SUCCEED = {
    "GET /api/v1/agent/hooks": {"pat_admin", "agent"},
    "GET /api/v1/connect/{runtime}": {"pat_admin", "agent"},
    "POST /api/v1/hooks/{runtime}": {"agent"},
    "PUT /api/v1/agent/hooks": {"pat_admin", "agent"},
    "GET /api/v1/declaration": {"agent"},
    "GET /api/v1/escalations": {"pat_admin", "pat_rev"},
    "POST /api/v1/escalations": {"agent"},
    "GET /api/v1/escalations/{id}": {"agent"},
    "POST /api/v1/escalations/{id}/decision": {"pat_admin", "pat_rev"},
    "GET /api/v1/records": {"pat_admin", "pat_auditor"},
    "POST /api/v1/records": {"agent"},
    "POST /api/v1/records/dead-letters": {"agent"},
    "GET /api/v1/records/export": {"pat_admin", "pat_auditor"},
    "GET /api/v1/records/export/{export_id}/manifest": {"pat_admin", "pat_auditor"},
    "GET /api/v1/governance-events/export": {"pat_admin", "pat_auditor"},
    "GET /api/v2/extendedAgent/agents": {"pat_admin", "agent"},
    "GET /api/v2/extendedAgent/agents/{name}": {"pat_admin", "agent"},
    "PUT /api/v2/extendedAgent/agents/{name}": {"pat_admin", "agent"},
    "DELETE /api/v2/extendedAgent/agents/{name}": {"pat_admin", "agent"},
}


def test_every_operation_is_fuzzed() -> None:
    assert set(OPERATIONS) == set(MUST_SUCCEED)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_operation_never_fails_and_keeps_its_schema(world: World, label: str, role: str) -> None:
    operation = OPERATIONS[label]
    headers = {"Authorization": f"Bearer {world.tokens[role]}"}
    generated = operation.as_strategy()
    invalid = operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)
    strategy = st.one_of(
        generated,
        generated.map(lambda case: _aim_at_sre(world, case)),
        invalid,
        invalid.map(lambda case: _aim_at_sre(world, case)),
        *(
            example.map(lambda case: _aim_at_sre(world, case))
            for example in operation.get_strategies_from_examples()
        ),
    ).map(_bounded_wait)
    statuses: list[int] = []

    @settings(
        max_examples=FUZZ_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        with transaction.atomic():
            response = case.call(headers=headers)
            transaction.set_rollback(True)
        statuses.append(response.status_code)
        case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])

    run()
    if role in MUST_SUCCEED[label]:
        assert any(200 <= status < 300 for status in statuses), sorted(set(statuses))


def _fake_response(status: int, body: Any, url: str) -> Any:
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body).encode()
    response.headers["Content-Type"] = "application/json"
    response.request = requests.Request("GET", url).prepare()
    response.url = url
    response.elapsed = datetime.timedelta(0)
    return response


@pytest.mark.parametrize(
    ("status", "body", "failure"),
    [
        (200, {"hooks": {"Stop": [{"prompt": "no type: a stored hook has one"}]}}, JsonSchemaError),
        (200, {"hookz": {}}, JsonSchemaError),
        (404, {"detail": "Not found."}, JsonSchemaError),  # DRF's shape, not the console's
        (500, {"error": {"code": "error", "message": "boom", "fields": {}}}, ServerError),
    ],
)
def test_the_checks_catch_a_response_that_breaks_the_contract(
    status: int, body: Any, failure: type[Exception]
) -> None:
    """The checks have teeth: each of these answers would fail the fuzzing."""
    case = OPERATIONS["GET /api/v1/agent/hooks"].Case(query={})
    response = _fake_response(status, body, "http://testserver/api/v1/agent/hooks")
    with pytest.raises(FailureGroup) as caught:
        case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
    assert any(isinstance(item, failure) for item in caught.value.exceptions)
