"""The SDK's conformance kit (`agent_hooks.ctk`) against console_client's host, one test
case per vector.

A vector that does not apply must skip for the documented reason; a vector with a known
difference is a strict expected failure, so it fails the suite the day it starts to pass
(tests/conformance/expectations.py, reported in docs/conformance.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_hooks.ctk import load_vectors, run_vector
from django.db import DEFAULT_DB_ALIAS, connections

from audit.models import InterceptionRecord
from tests.conformance.conftest import GovernedAgent
from tests.conformance.expectations import EXPECTED_FAILURES, NOT_APPLICABLE
from tests.conformance.harness import ConsoleClientHarness, VectorHooks

# django_db: so pytest-django creates the test database the live console serves from.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.django_db]

VECTORS = load_vectors()


def _case(vector: dict[str, Any]) -> Any:
    reason = EXPECTED_FAILURES.get(vector["id"])
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(vector, id=vector["id"], marks=marks)


@pytest.mark.parametrize("vector", [_case(v) for v in VECTORS])
async def test_vector(vector: dict[str, Any], console_hooks: VectorHooks) -> None:
    vid = vector["id"]
    result = await run_vector(ConsoleClientHarness(console_hooks), vector)
    if result.status == "skip":
        assert vid in NOT_APPLICABLE, f"{vid} did not apply ({result.detail}); it is documented to"
        pytest.skip(f"{NOT_APPLICABLE[vid]} ({result.detail})")
    assert vid not in NOT_APPLICABLE, f"{vid} ran; docs/conformance.md says it does not apply"
    assert result.status == "pass", "\n".join(result.failures)


async def test_the_console_stored_every_record_the_host_emitted(
    console_hooks: VectorHooks, governed_agent: GovernedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs after the vectors: every record of every path they took (host errors, blocks,
    approvals, evaluate_only, null identities) was accepted and stored once."""
    if console_hooks.emitted == 0:
        pytest.skip("no vector ran in this session (select the vectors too)")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    await console_hooks.records.flush()
    assert console_hooks.records.dead_lettered == 0
    assert console_hooks.records.spooled == 0
    assert console_hooks.records.delivered == console_hooks.emitted
    try:
        stored = InterceptionRecord.objects.filter(agent=governed_agent.agent).count()
    finally:
        # On the loop's thread Django's connections are per context: this test's own one
        # goes back to the pool now, not when the garbage collector finds it.
        connections[DEFAULT_DB_ALIAS].close()
    assert stored == console_hooks.emitted
