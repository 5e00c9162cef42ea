"""X-Request-ID: kept when usable, made otherwise, answered on every response, and stored on
the governance events the request (websocket, task) wrote."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from celery.contrib.testing.worker import start_worker
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient, Client

from agents.hook_testing import sample_context
from agents.tasks import hook_test_run_task
from console import asgi
from console.celery import app as celery_app
from console.governance.models import GovernanceEvent
from console.request_id import (
    RequestIdAsgiMiddleware,
    current_request_id,
    request_id_bound,
)
from demo.documents import DEMO_APPROVAL_HOOK

MADE = re.compile(r"[0-9a-f]{32}")
HOOKS_URL = "/api/v1/agent/hooks"
APPROVAL_HOOKS = {"hooks": {"PreToolUse": [dict(DEMO_APPROVAL_HOOK)]}}


def test_a_usable_incoming_id_is_kept_and_answered(client: Client) -> None:
    offered = "edge-7f3a:42.retry_1"
    response = client.get("/accounts/login/", HTTP_X_REQUEST_ID=offered)
    assert response["X-Request-ID"] == offered


@pytest.mark.parametrize(
    "offered",
    ["", "x" * 65, "two words", "<script>", "naïve", "-starts-with-a-dash", "a\tb", "id;drop"],
)
def test_an_unusable_incoming_id_is_replaced_by_a_new_one(client: Client, offered: str) -> None:
    answered = client.get("/accounts/login/", HTTP_X_REQUEST_ID=offered)["X-Request-ID"]
    assert MADE.fullmatch(answered) and answered != offered


def test_without_an_id_each_request_gets_its_own(client: Client) -> None:
    first = client.get("/accounts/login/")["X-Request-ID"]
    second = client.get("/accounts/login/")["X-Request-ID"]
    assert MADE.fullmatch(first) and MADE.fullmatch(second) and first != second


def test_a_request_refused_before_any_view_carries_the_id_too(client: Client) -> None:
    response = client.post(
        "/api/v1/records", b"{}", content_type="application/json", CONTENT_LENGTH="999999999"
    )
    assert response.status_code == 413
    assert MADE.fullmatch(response["X-Request-ID"])


async def test_the_async_long_poll_answers_the_id() -> None:
    response = await AsyncClient().get(
        "/api/v1/escalations/00000000-0000-0000-0000-000000000000?wait=1",
        headers={"X-Request-ID": "poll-1"},
    )
    assert response.status_code == 401
    assert response["X-Request-ID"] == "poll-1"


@pytest.mark.django_db
def test_the_governance_event_stores_the_id_of_the_request_that_made_the_change(sre) -> None:
    response = Client().put(
        HOOKS_URL,
        json.dumps(APPROVAL_HOOKS),
        content_type="application/json",
        HTTP_X_REQUEST_ID="change-1",
        **sre.headers(),
    )
    assert response.status_code == 200, response.content
    event = GovernanceEvent.objects.get(action="hooks.replaced")
    assert event.request_id == "change-1"


@pytest.mark.django_db
def test_the_events_page_shows_the_request_id(sre, auditor_client: Client) -> None:
    Client().put(
        HOOKS_URL,
        json.dumps(APPROVAL_HOOKS),
        content_type="application/json",
        HTTP_X_REQUEST_ID="shown-on-the-page",
        **sre.headers(),
    )
    body = auditor_client.get("/audit/events/").content.decode()
    assert 'title="X-Request-ID shown-on-the-page"' in body


@pytest.mark.django_db
def test_each_request_stores_its_own_id_and_work_outside_a_request_stores_none(sre) -> None:
    client = Client()
    for _ in range(2):
        client.put(
            HOOKS_URL, json.dumps(APPROVAL_HOOKS), content_type="application/json", **sre.headers()
        )
    ids = list(GovernanceEvent.objects.filter(action="hooks.replaced").values_list("request_id"))
    assert len(ids) == 2 and ids[0] != ids[1] and all(MADE.fullmatch(i) for (i,) in ids)
    # Written by the sre fixture outside any request: agent.created, token.issued.
    assert not GovernanceEvent.objects.filter(request_id__isnull=False).exclude(
        action="hooks.replaced"
    )


class EchoRequestId(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        await self.accept()
        await self.send_json({"bound": current_request_id(), "scope": self.scope["request_id"]})


async def _echo(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    communicator = WebsocketCommunicator(RequestIdAsgiMiddleware(EchoRequestId.as_asgi()), "/")
    communicator.scope["headers"] = headers
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    answer: dict[str, str] = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    return answer


async def test_a_websocket_connection_keeps_one_id_while_open() -> None:
    assert await _echo([(b"x-request-id", b"ws-1")]) == {"bound": "ws-1", "scope": "ws-1"}
    made = await _echo([(b"x-request-id", b"no good")])
    assert MADE.fullmatch(made["bound"]) and made["scope"] == made["bound"]


def test_the_websocket_router_goes_through_the_request_id_middleware() -> None:
    assert isinstance(asgi.application.application_mapping["websocket"], RequestIdAsgiMiddleware)


@pytest.fixture
def worker() -> Iterator[None]:
    """A real worker in a thread, taking tasks from the configured broker."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    celery_app.control.purge()
    try:
        with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        celery_app.conf.task_always_eager = eager


def _hook_tested(timeout: float = 20.0) -> GovernanceEvent:
    deadline = time.monotonic() + timeout
    while (event := GovernanceEvent.objects.filter(action="hook.tested").first()) is None:
        if time.monotonic() > deadline:
            raise AssertionError("no hook.tested event was written")
        time.sleep(0.1)
    return event


def _send_hook_test() -> None:
    hook_test_run_task.delay(
        actor_id=None,
        hook_definition=dict(DEMO_APPROVAL_HOOK),
        event="PreToolUse",
        # A tool the hook's matcher takes: a skipped hook runs nothing and records nothing.
        context={**sample_context("PreToolUse", "sre"), "tool_name": "restart_service"},
    )


@pytest.mark.django_db(transaction=True)
def test_a_task_published_during_a_request_runs_with_its_id(worker) -> None:
    with request_id_bound("task-parent-1"):
        _send_hook_test()
    assert _hook_tested().request_id == "task-parent-1"


@pytest.mark.django_db(transaction=True)
def test_a_task_published_outside_a_request_stores_none(worker) -> None:
    _send_hook_test()
    assert _hook_tested().request_id is None


@pytest.mark.django_db
def test_an_eager_task_runs_in_its_callers_context() -> None:
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        with request_id_bound("eager-1"):
            _send_hook_test()
    finally:
        celery_app.conf.task_always_eager = eager
    assert _hook_tested(timeout=0).request_id == "eager-1"


def test_nothing_stays_bound_after_a_request(client: Client) -> None:
    client.get("/accounts/login/", HTTP_X_REQUEST_ID="gone-after")
    assert current_request_id() is None


async def test_nothing_stays_bound_after_a_websocket() -> None:
    await _echo([(b"x-request-id", b"ws-gone")])
    assert await sync_to_async(current_request_id)() is None
