"""POST /api/v1/escalations: the strings and numbers the escalation row keeps are bounded
(approvals.validation), refused with a 400 naming the field, never a 500 or a silent cut."""

from __future__ import annotations

from typing import Any

import pytest

from approvals.models import Escalation
from approvals.validation import (
    COUNT_MAX,
    TOOL_SCHEMA_MAX_BYTES,
    VERDICT_MESSAGE_MAX_CHARS,
    VERDICT_REASON_MAX_CHARS,
)
from tests.approvals.conftest import (
    TOOL_SCHEMA,
    approval_request,
    ensure_approval_hook,
    post_escalation,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _approval_hook(sre):
    # The console accepts an escalation only for a call one of its approval hooks matches.
    ensure_approval_hook(sre)


@pytest.mark.parametrize("key", ["turn", "revision"])
def test_a_count_past_the_column_is_refused_not_a_server_error(client, sre, key):
    response = post_escalation(client, sre, approval_request(), **{key: COUNT_MAX + 1})
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [f"/meta/{key}"]
    assert post_escalation(client, sre, approval_request(), **{key: COUNT_MAX}).status_code == 201


@pytest.mark.parametrize(
    ("member", "limit"),
    [("message", VERDICT_MESSAGE_MAX_CHARS), ("reason", VERDICT_REASON_MAX_CHARS)],
)
def test_the_verdicts_text_is_bounded(client, sre, member, limit):
    over = approval_request()
    over["verdict"][member] = "x" * (limit + 1)
    response = post_escalation(client, sre, over)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [f"/request/verdict/{member}"]
    assert Escalation.objects.count() == 0
    at_limit = approval_request()
    at_limit["verdict"][member] = "x" * limit
    assert post_escalation(client, sre, at_limit).status_code == 201
    stored: Any = getattr(Escalation.objects.get(), f"verdict_{member}")
    assert stored == "x" * limit


def test_a_tool_schema_over_64_kib_is_refused(client, sre):
    huge = {**TOOL_SCHEMA, "description": "d" * TOOL_SCHEMA_MAX_BYTES}
    response = post_escalation(client, sre, approval_request(), tool_schema=huge)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["/meta/tool_schema"]
    ok = post_escalation(client, sre, approval_request(), tool_schema=TOOL_SCHEMA)
    assert ok.status_code == 201
