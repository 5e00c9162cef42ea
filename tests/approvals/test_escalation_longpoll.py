"""GET /api/v1/escalations/{id}?wait=N: own agent only, woken by the decision, bounded wait."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client

from agents import services as agent_services
from agents.models import AgentToken
from approvals import longpoll, services
from approvals.models import Escalation
from console import services as console_services
from console.asgi_handler import ConsoleAsgiHandler
from tests.approvals.conftest import (
    TOOL_SCHEMA,
    approval_hook,
    approval_request,
    ensure_approval_hook,
    in_own_thread,
    post_escalation,
    resolution_errors,
)
from tests.console.test_asgi_handler import get, hops  # noqa: F401 (a fixture)


def poll(client: Client, escalation: Escalation, agent, wait: str | None = None):
    query = f"?wait={wait}" if wait is not None else ""
    return client.get(f"/api/v1/escalations/{escalation.pk}{query}", **agent.headers())


def test_pending_answer_has_the_contract_shape(client, sre, escalate):
    escalation = escalate()
    body = poll(client, escalation, sre).json()
    assert body["id"] == str(escalation.pk)
    assert body["status"] == "pending"
    assert body["resolution"] is None
    assert body["decided_by"] is None and body["decided_at"] is None and body["reason"] is None


def test_decided_escalation_returns_at_once_with_a_schema_valid_resolution(
    client, sre, escalate, rita
):
    escalation = escalate(tool_schema=TOOL_SCHEMA)
    services.escalation_decide(
        escalation=escalation, actor=rita, outcome="approve", reason="ok", args={"service": "web"}
    )
    started = time.monotonic()
    body = poll(client, escalation, sre, wait="30").json()
    assert time.monotonic() - started < 5
    assert body["status"] == "approved"
    assert body["decided_by"] == "rita" and body["reason"] == "ok" and body["decided_at"]
    assert body["resolution"]["context_identity"] == escalation.context_identity
    assert body["resolution"]["verdict"]["transform"]["value"] == {"service": "web"}
    assert resolution_errors(body["resolution"]) == []


def test_identity_echo_is_byte_for_byte(client, sre, rita):
    ensure_approval_hook(sre)
    request = approval_request()
    request["context_identity"] = "  Ünïcode ✓ identity\twith spaces  "
    created = post_escalation(client, sre, request).json()
    escalation = Escalation.objects.get(pk=created["id"])
    services.escalation_decide(escalation=escalation, actor=rita, outcome="approve")
    body = poll(client, escalation, sre).json()
    assert body["resolution"]["context_identity"] == request["context_identity"]


def test_null_identity_echoes_as_null(client, sre, rita):
    ensure_approval_hook(sre)
    request = approval_request()
    request["context_identity"] = None
    created = post_escalation(client, sre, request).json()
    escalation = Escalation.objects.get(pk=created["id"])
    services.escalation_decide(escalation=escalation, actor=rita, outcome="reject", reason="no")
    resolution = poll(client, escalation, sre).json()["resolution"]
    assert resolution["context_identity"] is None
    assert resolution_errors(resolution) == []


def test_past_expiry_reads_as_expired_before_the_sweep(client, sre, escalate, monkeypatch):
    escalation = escalate()
    Escalation.objects.filter(pk=escalation.pk).update(expires_at=escalation.created_at)
    body = poll(client, escalation, sre).json()
    assert body["status"] == "expired"
    assert body["reason"] == "approval_expired"
    assert body["resolution"]["outcome"] == "reject"
    assert body["resolution"]["verdict"]["reason"] == "approval_expired"
    assert resolution_errors(body["resolution"]) == []


def test_another_agents_token_gets_404(client, sre, other, escalate):
    escalation = escalate()
    assert poll(client, escalation, other).status_code == 404


def test_unknown_or_malformed_ids_are_404(client, sre):
    assert client.get("/api/v1/escalations/not-a-uuid", **sre.headers()).status_code == 404
    missing = "/api/v1/escalations/00000000-0000-0000-0000-000000000000"
    assert client.get(missing, **sre.headers()).status_code == 404


def test_people_and_anonymous_cannot_long_poll(client, sre, escalate, rita):
    escalation = escalate()
    token = console_services.api_token_issue(actor=None, user=rita).plaintext
    as_person = client.get(
        f"/api/v1/escalations/{escalation.pk}", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert as_person.status_code == 403
    anonymous = client.get(f"/api/v1/escalations/{escalation.pk}")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "not_authenticated"


def test_bad_wait_is_refused_naming_the_parameter(client, sre, escalate):
    escalation = escalate()
    response = poll(client, escalation, sre, wait="soon")
    assert response.status_code == 400
    assert "/wait" in response.json()["error"]["fields"]


def test_wait_is_capped_at_the_configured_maximum(client, sre, escalate, settings):
    settings.CONSOLE_LONGPOLL_MAX_SECONDS = 1
    escalation = escalate()
    started = time.monotonic()
    response = poll(client, escalation, sre, wait="3600")
    assert response.status_code == 200 and response.json()["status"] == "pending"
    assert time.monotonic() - started < 30


def _auth(agent) -> dict[str, str]:
    return {"Authorization": f"Bearer {agent.token}"}


@pytest.mark.django_db(transaction=True)
async def test_long_poll_returns_when_the_decision_is_pushed(
    sre, rita, escalate, monkeypatch, close_db_after
):
    # A re-check slower than the wait: only the pushed wake-up can end this poll early.
    monkeypatch.setattr(longpoll, "SAFETY_RECHECK_SECONDS", 60.0)
    escalation = await sync_to_async(escalate)()
    url = f"/api/v1/escalations/{escalation.pk}?wait=20"
    started = time.monotonic()
    waiting = asyncio.create_task(AsyncClient().get(url, headers=_auth(sre)))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    # A thread of its own, like another request: the poll holds the test's sync thread.
    await asyncio.to_thread(
        in_own_thread(services.escalation_decide),
        escalation=escalation,
        actor=rita,
        outcome="reject",
        reason="not now",
    )
    response = await asyncio.wait_for(waiting, timeout=25)
    elapsed = time.monotonic() - started
    body = response.json()
    assert body["status"] == "rejected" and body["reason"] == "not now"
    assert elapsed < 10, f"the poll was not woken by the decision ({elapsed:.1f}s)"


@pytest.mark.django_db(transaction=True)
async def test_long_poll_times_out_pending_after_the_wait(sre, escalate, close_db_after):
    escalation = await sync_to_async(escalate)()
    started = time.monotonic()
    response = await AsyncClient().get(
        f"/api/v1/escalations/{escalation.pk}?wait=1", headers=_auth(sre)
    )
    assert time.monotonic() - started >= 0.95
    assert response.status_code == 200
    assert response.json()["status"] == "pending"


@pytest.mark.django_db(transaction=True)
async def test_long_poll_returns_expired_at_the_expiry(sre, escalate, monkeypatch, close_db_after):
    monkeypatch.setattr(longpoll, "SAFETY_RECHECK_SECONDS", 60.0)
    hook = await sync_to_async(approval_hook)(sre, expiresIn=1)
    escalation = await sync_to_async(escalate)(hook=hook.key)
    started = time.monotonic()
    response = await AsyncClient().get(
        f"/api/v1/escalations/{escalation.pk}?wait=15", headers=_auth(sre)
    )
    assert time.monotonic() - started < 10
    body = response.json()
    assert body["status"] == "expired"
    assert body["resolution"]["verdict"]["reason"] == "approval_expired"


@pytest.mark.django_db(transaction=True)
async def test_a_token_revoked_while_waiting_gets_401_not_the_decision(
    sre, rita, escalate, close_db_after
):
    escalation = await sync_to_async(escalate)(tool_schema=TOOL_SCHEMA)
    url = f"/api/v1/escalations/{escalation.pk}?wait=20"
    waiting = asyncio.create_task(AsyncClient().get(url, headers=_auth(sre)))
    await asyncio.sleep(0.5)
    assert not waiting.done()

    def revoke_then_decide() -> None:
        token = AgentToken.objects.get(agent=sre.agent)
        agent_services.agent_token_revoke(actor=None, token=token)
        services.escalation_decide(
            escalation=escalation,
            actor=rita,
            outcome="approve",
            args={"service": "edited-by-rita"},
        )

    await asyncio.to_thread(in_own_thread(revoke_then_decide))
    response = await asyncio.wait_for(waiting, timeout=25)
    assert response.status_code == 401
    assert "edited-by-rita" not in response.content.decode()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_answer_crosses_to_a_thread_only_for_its_own_read(
    sre,
    escalate,
    hops,  # noqa: F811
    close_db_after,
):
    """Through the console's ASGI handler: Django's middleware hooks run on the event loop
    in the async chain (console.async_middleware; they cost 13 crossings before)."""
    escalation = await sync_to_async(escalate)()
    handler = ConsoleAsgiHandler()
    path = f"/api/v1/escalations/{escalation.pk}?wait=0"
    headers = {"Authorization": f"Bearer {sre.token}"}
    await get(handler, path, headers=headers)
    hops["hops"] = 0
    answer = await get(handler, path, headers=headers)
    assert answer.status_code == 200 and answer.json()["status"] == "pending"
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert "content-security-policy" in answer.headers
    # request_started and request_finished (sync receivers) and the view's one read.
    assert hops["hops"] == 3, hops
