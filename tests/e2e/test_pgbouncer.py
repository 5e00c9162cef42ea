"""The console behind a real PgBouncer in transaction pooling mode (DATABASE_TRANSACTION_POOLING=1).

A private pgbouncer (tests/e2e/scaleout.py) on a free loopback port fronts this run's test
database with 2 server connections, handed out round-robin: consecutive transactions of one
console connection run on different PostgreSQL sessions, so a prepared statement, a WITH
HOLD cursor, a session setting or a session advisory lock would be missing in the next
transaction and the request would fail. Through it, a real daphne process serves the paths
that matter: record ingest (more batches than psycopg's prepare threshold, a replay
de-duplicated), escalation + long-poll + decision, the record search API and the export
(COPY on its own connection, the manifest written back), login and the portal pages (the
hook page reads with `.iterator()`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.db import connection

from agents.models import Hook
from audit.models import InterceptionRecord, RecordExport
from console import services as console_services
from tests.approvals.conftest import approval_request, ensure_approval_hook
from tests.audit.record_wires import items, sdk_session
from tests.e2e.live import LiveConsole, start_console, stop_console
from tests.e2e.scaleout import PgBouncer, require

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]
# psycopg would prepare a statement on its 5th run on a connection (Django turns that off):
# more batches than that, so a prepared statement would be used on another server session.
BATCHES = 12
POOL_SIZE = 2


@pytest.fixture(scope="module")
def bouncer(django_db_setup: None, django_db_blocker: Any) -> Iterator[PgBouncer]:
    require(PgBouncer.missing())
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("PgBouncer fronts PostgreSQL (set DATABASE_URL)")
    pooler = PgBouncer(
        db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432), pool_size=POOL_SIZE
    )
    pooler.start(users=(db.get("USER") or "postgres",))
    try:
        yield pooler
    finally:
        pooler.stop()


@pytest.fixture(scope="module")
def console(bouncer: PgBouncer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveConsole]:
    db = settings.DATABASES["default"]
    log: Path = tmp_path_factory.mktemp("pgbouncer-console") / "daphne.log"
    live = start_console(
        log,
        timeout=90,
        database_url=bouncer.url(connection.settings_dict["NAME"], db.get("USER") or "postgres"),
        extra_env={"DATABASE_TRANSACTION_POOLING": "1"},
    )
    try:
        yield live
    finally:
        stop_console(live)
        # A request that failed on a missing prepared statement or cursor logs it here.
        text = log.read_text(errors="replace")
        assert "does not exist" not in text, text[-3000:]


def _token(username: str, role: str) -> str:
    user = console_services.user_set_role(actor=None, username=username, role=role)
    return console_services.api_token_issue(actor=None, user=user, name="pgbouncer").plaintext


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _servers(bouncer: PgBouncer) -> list[dict[str, object]]:
    name = connection.settings_dict["NAME"]
    return [row for row in bouncer.show("SERVERS") if row["database"] == name]


def _transactions(bouncer: PgBouncer) -> int:
    name = connection.settings_dict["NAME"]
    return sum(
        int(str(row["total_xact_count"]))
        for row in bouncer.show("STATS")
        if row["database"] == name
    )


def test_ingest_search_and_export_share_two_server_connections(console, bouncer, sre):
    before = _transactions(bouncer)
    batches = [items(sdk_session(["ls", "cat"])) for _ in range(BATCHES)]
    for batch in batches:
        answer = httpx.post(
            f"{console.url}/api/v1/records", json=batch, headers=_bearer(sre.token), timeout=30
        )
        assert answer.status_code == 202, answer.text
        assert answer.json() == {"accepted": len(batch), "duplicates": 0}
    replay = httpx.post(
        f"{console.url}/api/v1/records", json=batches[0], headers=_bearer(sre.token), timeout=30
    )
    assert replay.status_code == 202, replay.text
    assert replay.json() == {"accepted": 0, "duplicates": len(batches[0])}
    stored = sum(len(batch) for batch in batches)
    assert InterceptionRecord.objects.filter(agent=sre.agent).count() == stored

    auditor = _bearer(_token("audrey", "auditor"))
    seen: list[Any] = []
    url: str | None = f"{console.url}/api/v1/records?agent=sre-agent&limit=10"
    while url:
        page = httpx.get(url, headers=auditor, timeout=30)
        assert page.status_code == 200, page.text
        seen += page.json()["results"]
        url = page.json()["next"]
    assert len(seen) == stored
    assert len({item["id"] for item in seen}) == stored

    for fmt in ("csv", "jsonl"):
        exported = httpx.get(
            f"{console.url}/api/v1/records/export",
            params={"agent": "sre-agent", "format": fmt},
            headers=auditor,
            timeout=60,
        )
        assert exported.status_code == 200, exported.text
        lines = exported.content.splitlines()
        assert len(lines) == stored + (1 if fmt == "csv" else 0)
        manifest = httpx.get(exported.headers["X-Export-Manifest"], headers=auditor, timeout=30)
        assert manifest.json()["complete"] is True, manifest.text
        assert manifest.json()["rows"] == stored
        assert manifest.json()["bytes"] == len(exported.content)
    assert RecordExport.objects.filter(completed_at__isnull=False).count() == 2

    # Every request above went through PgBouncer, over at most POOL_SIZE server sessions.
    assert _transactions(bouncer) - before > 2 * BATCHES
    assert 0 < len(_servers(bouncer)) <= POOL_SIZE


def test_escalation_long_poll_and_decision(console, bouncer, sre):
    ensure_approval_hook(sre)
    reviewer = _bearer(_token("rita", "reviewer"))
    created = httpx.post(
        f"{console.url}/api/v1/escalations",
        json={"request": approval_request()},
        headers=_bearer(sre.token),
        timeout=30,
    )
    assert created.status_code == 201, created.text
    escalation = created.json()["id"]
    answers: list[httpx.Response] = []

    def long_poll() -> None:
        answers.append(
            httpx.get(
                f"{console.url}/api/v1/escalations/{escalation}",
                params={"wait": 20},
                headers=_bearer(sre.token),
                timeout=30,
            )
        )

    poller = threading.Thread(target=long_poll)
    poller.start()
    pending = httpx.get(f"{console.url}/api/v1/escalations", headers=reviewer, timeout=30)
    assert pending.status_code == 200, pending.text
    assert escalation in pending.text
    decided = httpx.post(
        f"{console.url}/api/v1/escalations/{escalation}/decision",
        json={"outcome": "approve"},
        headers=reviewer,
        timeout=30,
    )
    assert decided.status_code == 200, decided.text
    poller.join(timeout=30)
    assert answers and answers[0].status_code == 200, answers
    assert answers[0].json()["status"] == "approved"
    assert len(_servers(bouncer)) <= POOL_SIZE


def test_login_and_portal_pages(console, bouncer, sre):
    console_services.user_set_role(
        actor=None, username="alice", role="admin", password="pw-alice-1"
    )
    ensure_approval_hook(sre)
    hook = Hook.objects.filter(agent=sre.agent, event="PreToolUse").first()
    assert hook is not None
    with httpx.Client(base_url=console.url, timeout=30) as browser:
        form = browser.get("/accounts/login/")
        assert form.status_code == 200
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token is not None
        signed_in = browser.post(
            "/accounts/login/",
            data={
                "username": "alice",
                "password": "pw-alice-1",
                "csrfmiddlewaretoken": token.group(1),
            },
        )
        assert signed_in.status_code == 302, signed_in.text[-2000:]
        assert "sessionid" in browser.cookies
        # The explorer (histogram, facets, page) and the hook page, whose activity section
        # reads with .iterator() (a WITH HOLD cursor without DISABLE_SERVER_SIDE_CURSORS).
        pages = {
            "/audit/?range=all": 'id="results"',
            f"/agents/{sre.agent.slug}/hooks/{hook.key}/overview/": 'id="hook-activity"',
            "/audit/dashboard/": "<main",
        }
        for path, marker in pages.items():
            page = browser.get(path)
            assert page.status_code == 200, (path, page.text[-2000:])
            assert marker in page.text, path
    assert len(_servers(bouncer)) <= POOL_SIZE
