"""The "Verify chain" action of the audit pages: the same check as `manage.py audit_verify`,
started by a POST with CSRF, run as a task (eager here), its result on a page (OK with
counts, or the first broken record linked), and a governance event."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from audit import verification
from audit.chain import chain_seal
from audit.models import ChainVerification, InterceptionRecord, RecordSeal
from console.celery import app as celery_app
from console.governance.models import GovernanceEvent
from tests.audit.record_wires import items, sdk_session

pytestmark = pytest.mark.django_db
VERIFY = "/audit/verify/"


@pytest.fixture(autouse=True)
def _eager() -> Any:
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = eager


@pytest.fixture
def sealed(client: Client, sre: Any, other: Any) -> Any:
    for agent, calls in ((sre, ["ls", "rm"]), (other, ["deploy"])):
        body = json.dumps(items(sdk_session(calls), tool_name="t"))
        response = client.post(
            "/api/v1/records", data=body, content_type="application/json", **agent.headers()
        )
        assert response.status_code == 202
    chain_seal(sre.agent.pk)
    chain_seal(other.agent.pk)
    return sre


def _start(client: Client, django_capture_on_commit_callbacks: Any, **data: str) -> Any:
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(VERIFY, data)
    return response


def test_an_intact_chain_is_ok_with_its_counts(
    auditor_client: Client, sealed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    response = _start(auditor_client, django_capture_on_commit_callbacks)

    assert response.status_code == 302
    run = ChainVerification.objects.get()
    assert response["Location"] == reverse("audit:verification", args=[run.pk])
    assert run.status == "ok" and run.actor_label == "audrey"
    expected = {
        slug: InterceptionRecord.objects.filter(agent__slug=slug).count()
        for slug in ("sre-agent", "other-agent")
    }
    assert {item["agent"]: item["verified"] for item in run.results} == expected
    body = auditor_client.get(response["Location"]).content.decode()
    assert "Every chain holds" in body
    assert f"<strong>{sum(expected.values())}</strong> records verified in 2 chains" in body
    event = GovernanceEvent.objects.get(action="records.chain_verified")
    assert event.actor_label == "audrey" and event.object_id == str(run.pk)
    assert event.after["status"] == "ok" and event.after["verified"] == sum(expected.values())
    assert "OK" in event.summary


def test_a_tampered_record_is_shown_as_the_first_broken_one(
    auditor_client: Client, sealed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    victim, later = RecordSeal.objects.filter(agent=sealed.agent).order_by("chain_seq")[2:4]
    for seal in (victim, later):
        InterceptionRecord.objects.filter(pk=seal.record_id).update(reason="nothing to see")

    response = _start(auditor_client, django_capture_on_commit_callbacks, agent="sre-agent")

    run = ChainVerification.objects.get()
    assert run.status == "broken" and run.agent_slug == "sre-agent"
    [result] = run.results
    assert result["verified"] == 2
    assert result["problem"]["kind"] == "altered"
    assert result["problem"]["record_id"] == victim.record_id
    body = auditor_client.get(response["Location"]).content.decode()
    link = reverse("audit:record", args=[victim.record_id])
    assert f'<a href="{link}">record {victim.record_id}</a>' in body
    assert reverse("audit:record", args=[later.record_id]) not in body
    event = GovernanceEvent.objects.get(action="records.chain_verified")
    assert event.agent_slug == "sre-agent"
    assert event.after["broken"][0]["record_id"] == victim.record_id


def test_the_page_and_the_command_run_the_same_check(
    sealed: Any, monkeypatch: pytest.MonkeyPatch, alice: Any
) -> None:
    walked: list[str] = []
    real = verification.chain_verify

    def spy(agent: Any) -> Any:
        walked.append(agent.slug)
        return real(agent)

    monkeypatch.setattr(verification, "chain_verify", spy)
    run = ChainVerification.objects.create(actor=alice, actor_label="alice")
    verification.chain_verification_run(run.pk)

    assert sorted(walked) == ["other-agent", "sre-agent"]


def test_an_unknown_agent_is_refused_naming_the_field_and_nothing_runs(
    auditor_client: Client, sealed: Any
) -> None:
    response = auditor_client.post(VERIFY, {"agent": "ghost"})

    assert response.status_code == 400
    assert "Agent: No agent &#x27;ghost&#x27;." in response.content.decode()
    assert not ChainVerification.objects.exists()
    assert not GovernanceEvent.objects.filter(action="records.chain_verified").exists()


def test_a_second_request_while_one_runs_joins_it(alice: Any, sre: Any) -> None:
    celery_app.conf.task_always_eager = False  # nothing runs: the first stays running
    first = ChainVerification.objects.create(actor=alice, actor_label="alice")

    again = verification.chain_verification_start(actor=alice)

    assert again.pk == first.pk and ChainVerification.objects.count() == 1


def test_a_running_verification_is_polled_by_its_status_part(
    auditor_client: Client, alice: Any
) -> None:
    run = ChainVerification.objects.create(actor=alice, actor_label="alice")
    url = reverse("audit:verification", args=[run.pk])

    page = auditor_client.get(url).content.decode()
    part = auditor_client.get(url, HTTP_HX_REQUEST="true").content.decode()

    assert f'hx-get="{url}" hx-trigger="every 2s"' in page
    assert f'href="{url}">Refresh</a>' in page  # the same without JavaScript
    assert part.lstrip().startswith('<div id="verification-status"')
    assert "<html" not in part


def test_the_audit_pages_carry_the_verify_button_with_csrf(auditor_client: Client) -> None:
    body = auditor_client.get("/audit/events/").content.decode()

    form = body[body.index('<form method="post" action="/audit/verify/"') :]
    assert 'name="csrfmiddlewaretoken"' in form[: form.index("</form>")]


def test_the_post_needs_the_csrf_token(audrey: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(audrey)

    assert client.post(VERIFY).status_code == 403
    assert not ChainVerification.objects.exists()


@pytest.mark.parametrize(
    ("client_name", "status"),
    [
        ("admin_client", 302),
        ("auditor_client", 302),
        ("reviewer_client", 403),
        ("outsider_client", 403),
    ],
)
def test_only_auditors_and_admins_verify(
    request: pytest.FixtureRequest, sre: Any, client_name: str, status: int
) -> None:
    client = request.getfixturevalue(client_name)
    assert client.post(VERIFY).status_code == status
    assert client.get(VERIFY).status_code == (200 if status == 302 else 403)


def test_another_persona_cannot_read_a_run(reviewer_client: Client, alice: Any) -> None:
    run = ChainVerification.objects.create(actor=alice, actor_label="alice")
    assert reviewer_client.get(reverse("audit:verification", args=[run.pk])).status_code == 403


def test_a_run_that_fails_is_shown_and_logged_as_failed(
    sealed: Any, monkeypatch: pytest.MonkeyPatch, alice: Any
) -> None:
    def broken_database(agent: Any) -> Any:
        raise RuntimeError("connection lost")

    monkeypatch.setattr(verification, "chain_verify", broken_database)
    run = ChainVerification.objects.create(actor=alice, actor_label="alice")

    verification.chain_verification_run(run.pk)

    run.refresh_from_db()
    assert run.status == "failed" and run.error == "RuntimeError: connection lost"
    event = GovernanceEvent.objects.get(action="records.chain_verified")
    assert event.after["status"] == "failed" and "could not finish" in event.summary
