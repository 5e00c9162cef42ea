"""Per-agent webhooks: sent after commit by a real Celery worker (a thread of the process on
the embedded default), retried with backoff, never in the way;
only to public addresses (checked again at each send), never following a redirect.

The receivers here listen on loopback, so these tests set CONSOLE_WEBHOOK_ALLOW_PRIVATE,
except those that show the refusal."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from celery.contrib.testing.worker import start_worker
from django.test import Client

from approvals import services
from approvals.tasks import escalation_notify_webhook
from console.celery import app
from console.embedded import tasks_in_process

pytestmark = pytest.mark.django_db(transaction=True)


class Receiver:
    """A local HTTP server that records each POST; scripted status codes, optional delay."""

    def __init__(
        self, statuses: list[int] | None = None, delay: float = 0.0, location: str = ""
    ) -> None:
        self.statuses = list(statuses or [])
        self.delay = delay
        self.location = location
        self.bodies: list[dict] = []
        self.answered_at: list[float] = []
        self.got = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(receiver.delay)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.end_headers()
                with receiver.got:
                    receiver.bodies.append(
                        {"status": status, "body": body, "host": self.headers["Host"]}
                    )
                    receiver.answered_at.append(time.monotonic())
                    receiver.got.notify_all()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def wait_for(self, count: int, timeout: float = 20.0) -> list[dict]:
        with self.got:
            self.got.wait_for(lambda: len(self.bodies) >= count, timeout=timeout)
        return self.bodies


@pytest.fixture(autouse=True)
def _receivers_listen_on_loopback(settings) -> None:
    settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def receiver_factory() -> Iterator:
    servers: list[Receiver] = []

    def make(**kwargs) -> Receiver:
        receiver = Receiver(**kwargs)
        threading.Thread(target=receiver.server.serve_forever, daemon=True).start()
        servers.append(receiver)
        return receiver

    yield make
    for receiver in servers:
        receiver.server.shutdown()
        receiver.server.server_close()


@pytest.fixture
def worker() -> Iterator:
    if tasks_in_process():  # the embedded default: a thread of this process sends
        yield
        return
    # Tasks other tests left queued on the shared broker would run first in this solo worker.
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield


def test_generic_json_webhook_on_create_and_decision(sre, rita, escalate, receiver_factory, worker):
    receiver = receiver_factory()
    sre.agent.webhook_url = receiver.url
    sre.agent.save(update_fields=["webhook_url"])
    escalation = escalate("restart_service", {"service": "secret-db"})
    services.escalation_decide(escalation=escalation, actor=rita, outcome="approve")
    bodies = [item["body"] for item in receiver.wait_for(2)]
    events = sorted(body["event"] for body in bodies)
    assert events == ["escalation.approved", "escalation.created"]
    created = next(body for body in bodies if body["event"] == "escalation.created")
    assert created["agent"] == "sre-agent" and created["tool_name"] == "restart_service"
    assert created["escalation"] == str(escalation.pk) and created["url"].endswith("/approvals/")
    assert "secret-db" not in json.dumps(bodies)  # metadata only, never arguments


def test_failed_webhook_is_retried_with_backoff(sre, escalate, receiver_factory, worker):
    receiver = receiver_factory(statuses=[503])
    sre.agent.webhook_url = receiver.url
    sre.agent.save(update_fields=["webhook_url"])
    escalate()
    answers = receiver.wait_for(2, timeout=25)
    assert [answer["status"] for answer in answers[:2]] == [503, 200]
    assert answers[0]["body"] == answers[1]["body"]
    assert receiver.answered_at[1] - receiver.answered_at[0] >= 1.5  # the backoff waited


def test_slack_webhook_gets_a_message_and_never_blocks_the_decision(
    sre, rita, escalate, receiver_factory, worker
):
    receiver = receiver_factory(delay=2.0)
    sre.agent.webhook_url = receiver.url
    sre.agent.webhook_format = "slack"
    sre.agent.save(update_fields=["webhook_url", "webhook_format"])
    escalation = escalate("scale_deployment", {"service": "web-secret-7"})
    client = Client()
    client.force_login(rita)
    response = client.post(
        f"/api/v1/escalations/{escalation.pk}/decision",
        json.dumps({"outcome": "reject", "reason": "freeze"}),
        content_type="application/json",
    )
    decided_at = time.monotonic()
    assert response.status_code == 200
    bodies = receiver.wait_for(2)
    assert decided_at < receiver.answered_at[-1]  # the decision did not wait for the receiver
    texts = [item["body"] for item in bodies]
    created = next(body for body in texts if "Approval needed" in body["text"])
    assert set(created) == {"text", "blocks"}  # Block Kit, with the text as the fallback
    assert "Approval needed: scale_deployment on sre-agent" in created["text"]
    decided = next(body for body in texts if body is not created)
    assert set(decided) == {"text"} and "rejected by rita" in decided["text"]
    assert "web-secret-7" not in json.dumps(texts)  # metadata only, never arguments


def _point_webhook_at(sre, url: str) -> None:
    """Stored as if saved before the rule, or by a name that resolved elsewhere then."""
    sre.agent.webhook_url = url
    sre.agent.save(update_fields=["webhook_url"])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_webhook_to_a_loopback_destination_is_not_sent(
    sre, escalate, receiver_factory, settings, host
):
    settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE = False
    receiver = receiver_factory()
    escalation = escalate()
    _point_webhook_at(sre, receiver.url.replace("127.0.0.1", host))
    assert escalation_notify_webhook(str(escalation.pk), "escalation.created") is None
    assert receiver.wait_for(1, timeout=1.0) == []


def test_webhook_follows_no_redirect(sre, escalate, receiver_factory):
    target = receiver_factory()
    redirector = receiver_factory(statuses=[307], location=target.url)
    escalation = escalate()
    _point_webhook_at(sre, redirector.url)
    assert escalation_notify_webhook(str(escalation.pk), "escalation.created") == 307
    assert len(redirector.wait_for(1)) == 1
    assert target.wait_for(1, timeout=1.0) == []


def test_webhook_by_name_connects_to_a_resolved_address_and_keeps_the_host(
    sre, escalate, receiver_factory
):
    receiver = receiver_factory()
    escalation = escalate()
    url = receiver.url.replace("127.0.0.1", "localhost")
    _point_webhook_at(sre, url)
    assert escalation_notify_webhook(str(escalation.pk), "escalation.created") == 200
    [answer] = receiver.wait_for(1)
    assert answer["host"] == f"localhost:{receiver.server.server_port}"
    assert answer["body"]["escalation"] == str(escalation.pk)
