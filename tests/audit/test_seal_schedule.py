"""An ingest commit queues its agent's seal task only when none is queued: the task clears
the agent's mark before it reads the pending batches, so every stored batch is sealed by a
task that starts after it was committed."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from audit import chain
from audit.models import RecordSeal, RecordSealPending
from audit.tasks import records_seal_chain
from tests.audit.record_wires import items, sdk_session

pytestmark = [pytest.mark.django_db, pytest.mark.redis]


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The agents whose seal task was published to the broker (the broker itself is not
    read by these tests: no worker runs here)."""
    calls: list[int] = []
    monkeypatch.setattr(records_seal_chain, "delay", lambda agent_id: calls.append(agent_id))
    return calls


def ingest(client: Any, agent: Any, callbacks: Any, calls: list[str]) -> None:
    body = json.dumps(items(sdk_session(calls), tool_name="t"))
    with callbacks(execute=True):
        response = client.post(
            "/api/v1/records", data=body, content_type="application/json", **agent.headers()
        )
    assert response.status_code == 202, response.content


def test_one_task_is_queued_per_agent_until_it_starts(
    client, sre, other, published, django_capture_on_commit_callbacks
):
    chain.seal_task_started(sre.agent.pk)  # no mark left by an earlier run
    chain.seal_task_started(other.agent.pk)
    for calls in (["ls"], ["rm", "audit"], ["deploy"]):
        ingest(client, sre, django_capture_on_commit_callbacks, calls)
    ingest(client, other, django_capture_on_commit_callbacks, ["ls"])
    assert published == [sre.agent.pk, other.agent.pk]
    ttl = redis.Redis.from_url(chain.settings.REDIS_URL).ttl(chain._seal_queued_key(sre.agent.pk))
    assert 0 < ttl <= chain.SEAL_QUEUED_SECONDS

    # The worker runs the one task: it seals all three batches and clears the mark.
    pending = RecordSealPending.objects.filter(agent=sre.agent).count()
    assert pending == 3
    sealed = records_seal_chain(sre.agent.pk)
    assert sealed == RecordSeal.objects.filter(agent=sre.agent).count() > 0
    assert not RecordSealPending.objects.filter(agent=sre.agent).exists()

    # The next commit queues the next task.
    ingest(client, sre, django_capture_on_commit_callbacks, ["crash"])
    assert published == [sre.agent.pk, other.agent.pk, sre.agent.pk]


def test_without_an_answer_from_redis_every_commit_queues_its_task(
    client, sre, published, django_capture_on_commit_callbacks, monkeypatch
):
    class Down:
        def set(self, *args: Any, **kwargs: Any) -> None:
            raise redis.ConnectionError("down")

        def delete(self, *args: Any) -> None:
            raise redis.ConnectionError("down")

    monkeypatch.setattr(chain, "shared_redis", lambda: Down())
    for calls in (["ls"], ["rm"]):
        ingest(client, sre, django_capture_on_commit_callbacks, calls)
    assert published == [sre.agent.pk, sre.agent.pk]
    chain.seal_task_started(sre.agent.pk)  # the task still runs
    assert records_seal_chain(sre.agent.pk) > 0
