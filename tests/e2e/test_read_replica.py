"""The record search and export read a real streaming replica (DATABASE_REPLICA_URL); every
write, and every read that must see its own writes, goes to the primary.

A private primary cluster and a hot standby made from it with `pg_basebackup -R`
(tests/e2e/scaleout.py); the console (daphne) runs with DATABASE_URL on the primary and
DATABASE_REPLICA_URL on the standby. With the standby's WAL replay paused, records stored
on the primary are not in the search, the explorer or the export (they read the replica)
while the ingest's duplicate check, approvals and a reviewer's own decision still see them
(they read the primary); once replay resumes the search finds them. A hot standby refuses
every write, so a write routed to it would fail the request: ingest, the export's manifest,
login and decisions all succeed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.approvals.conftest import approval_request
from tests.audit.record_wires import items, sdk_session
from tests.e2e.live import ROOT, LiveConsole, start_console, stop_console
from tests.e2e.scaleout import StreamingPair, require

pytestmark = [pytest.mark.postgresql]
DBNAME = "console"
PASSWORD = "replica-pw-audrey-1"


@dataclass
class Stack:
    pair: StreamingPair
    console: LiveConsole
    tokens: dict[str, str]

    def primary(self, sql: str, params: list[Any] | None = None) -> Any:
        with psycopg.connect(self.pair.url(DBNAME), autocommit=True) as conn:
            return conn.execute(sql, params).fetchone()

    def standby(self, sql: str) -> Any:
        with psycopg.connect(self.pair.url(DBNAME, standby=True), autocommit=True) as conn:
            return conn.execute(sql).fetchone()

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require(StreamingPair.missing())
    pair = StreamingPair()
    logs: Path = tmp_path_factory.mktemp("replica")
    try:
        pair.start()
        with psycopg.connect(pair.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DBNAME}")
        env = {"DATABASE_URL": pair.url(DBNAME), "DJANGO_SETTINGS_MODULE": "console.settings"}
        done = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "e2e" / "provision_scaleout.py"),
             "--password", PASSWORD],
            cwd=ROOT, env={**_inherited(), **env}, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        tokens = json.loads(done.stdout.strip().splitlines()[-1])
        console = start_console(
            logs / "daphne.log",
            timeout=90,
            database_url=pair.url(DBNAME),
            extra_env={"DATABASE_REPLICA_URL": pair.url(DBNAME, standby=True)},
        )
        try:
            yield Stack(pair=pair, console=console, tokens=tokens)
        finally:
            stop_console(console)
            text = (logs / "daphne.log").read_text(errors="replace")
            assert "read-only transaction" not in text, text[-3000:]
    finally:
        pair.stop()


def _inherited() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DATABASE_REPLICA_URL"}
    }


def _ingest(stack: Stack, batch: list[dict[str, Any]]) -> dict[str, int]:
    answer = httpx.post(
        f"{stack.console.url}/api/v1/records",
        json=batch,
        headers=stack.headers("agent"),
        timeout=30,
    )
    assert answer.status_code == 202, answer.text
    return dict(answer.json())


def _searched(stack: Stack) -> int:
    page = httpx.get(
        f"{stack.console.url}/api/v1/records",
        params={"agent": "sre-agent", "limit": 500},
        headers=stack.headers("auditor"),
        timeout=30,
    )
    assert page.status_code == 200, page.text
    return len(page.json()["results"])


def _exported(stack: Stack) -> int:
    exported = httpx.get(
        f"{stack.console.url}/api/v1/records/export",
        params={"agent": "sre-agent", "format": "jsonl"},
        headers=stack.headers("auditor"),
        timeout=60,
    )
    assert exported.status_code == 200, exported.text
    manifest = httpx.get(
        exported.headers["X-Export-Manifest"], headers=stack.headers("auditor"), timeout=30
    )
    # The manifest is written on the primary and read back from it at once.
    assert manifest.json()["complete"] is True, manifest.text
    assert manifest.json()["rows"] == len(exported.content.splitlines())
    return int(manifest.json()["rows"])


def _until(what: str, check: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _stored(stack: Stack) -> int:
    return int(stack.primary("SELECT count(*) FROM audit_interceptionrecord")[0])


def test_search_and_export_read_the_replica_everything_else_the_primary(stack):
    assert stack.standby("SELECT pg_is_in_recovery()")[0] is True
    first = items(sdk_session(["ls", "cat"]))
    assert _ingest(stack, first)["accepted"] == len(first)
    # Streamed to the standby: the search finds the records there.
    _until("the replica never had the first batch", lambda: _searched(stack) == len(first))

    stack.standby("SELECT pg_wal_replay_pause()")
    try:
        second = items(sdk_session(["deploy", "rm", "grep"]))
        assert _ingest(stack, second) == {"accepted": len(second), "duplicates": 0}
        # The duplicate check reads the primary: the replay is known though the replica lags.
        assert _ingest(stack, second) == {"accepted": 0, "duplicates": len(second)}
        assert _stored(stack) == len(first) + len(second)
        # The search and the export read the paused replica: the second batch is not there.
        assert _searched(stack) == len(first)
        assert _exported(stack) == len(first)
        _explorer_total(stack, expected=len(first))
        _approval_round_trip(stack)
    finally:
        stack.standby("SELECT pg_wal_replay_resume()")
    _until("the replica never caught up", lambda: _searched(stack) == len(first) + len(second))
    assert _exported(stack) == len(first) + len(second)
    exports = stack.primary(
        "SELECT count(*) FROM audit_recordexport WHERE completed_at IS NOT NULL"
    )
    assert exports[0] == 2


def _explorer_total(stack: Stack, *, expected: int) -> None:
    """Login (a session written on the primary) and the explorer, which says where it reads."""
    with httpx.Client(base_url=stack.console.url, timeout=30) as browser:
        form = browser.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token is not None, form.text[-1000:]
        signed_in = browser.post(
            "/accounts/login/",
            data={
                "username": "audrey",
                "password": PASSWORD,
                "csrfmiddlewaretoken": token.group(1),
            },
        )
        assert signed_in.status_code == 302, signed_in.text[-2000:]
        page = browser.get("/audit/", params={"range": "all", "agent": "sre-agent"})
        assert page.status_code == 200, page.text[-2000:]
        assert f'data-total="{expected}"' in page.text
        assert 'data-read-from="replica"' in page.text


def _approval_round_trip(stack: Stack) -> None:
    """Approvals read and write the primary: an escalation created while the replica lags is
    in the reviewer's list at once, and the agent reads the decision right after it."""
    url = stack.console.url
    created = httpx.post(
        f"{url}/api/v1/escalations",
        json={"request": approval_request()},
        headers=stack.headers("agent"),
        timeout=30,
    )
    assert created.status_code == 201, created.text
    escalation = created.json()["id"]
    pending = httpx.get(f"{url}/api/v1/escalations", headers=stack.headers("reviewer"), timeout=30)
    assert escalation in pending.text, pending.text
    decided = httpx.post(
        f"{url}/api/v1/escalations/{escalation}/decision",
        json={"outcome": "reject", "reason": "not during the freeze"},
        headers=stack.headers("reviewer"),
        timeout=30,
    )
    assert decided.status_code == 200, decided.text
    answer = httpx.get(
        f"{url}/api/v1/escalations/{escalation}", headers=stack.headers("agent"), timeout=30
    )
    assert answer.json()["status"] == "rejected", answer.text
