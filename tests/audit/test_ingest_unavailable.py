"""Ingest never answers 2xx for data it did not store: a down or locked database is 503."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from audit.models import InterceptionRecord
from tests.audit.record_wires import items, sdk_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]
ROOT = Path(__file__).resolve().parents[2]


def _conninfo() -> dict[str, object]:
    s = connection.settings_dict
    info = {"dbname": s["NAME"], "user": s["USER"], "host": s["HOST"], "port": s["PORT"]}
    return {k: v for k, v in info.items() if v}


def test_lock_timeout_answers_503_with_retry_after_and_stores_nothing(client, sre, settings):
    settings.CONSOLE_RECORD_INGEST_LOCK_TIMEOUT_MS = 300
    batch = json.dumps(items(sdk_session(["ls", "rm"])))
    with psycopg.connect(**_conninfo()) as locker:
        locker.execute("LOCK TABLE audit_interceptionrecord IN SHARE ROW EXCLUSIVE MODE")
        response = client.post(
            "/api/v1/records", data=batch, content_type="application/json", **sre.headers()
        )
        assert response.status_code == 503, response.content
        assert response["Retry-After"] == "5"
        assert response.json()["error"]["code"] == "unavailable"
        locker.rollback()
    assert InterceptionRecord.objects.count() == 0
    retry = client.post(
        "/api/v1/records", data=batch, content_type="application/json", **sre.headers()
    )
    assert retry.status_code == 202 and retry.json()["accepted"] == 6


SCRIPT = textwrap.dedent(
    """
    import json, django
    django.setup()
    from django.test import Client
    client = Client()
    post = client.post("/api/v1/records", data="[]", content_type="application/json",
                       HTTP_AUTHORIZATION="Bearer agt_0123456789abcdef")
    get = client.get("/api/v1/records", HTTP_AUTHORIZATION="Bearer pat_0123456789abcdef")
    print(json.dumps([post.status_code, post.get("Retry-After"), get.status_code]))
    """
)


def test_database_down_is_503_not_500_even_before_authentication():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:1/closed_port",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    post_status, retry_after, get_status = json.loads(done.stdout.strip().splitlines()[-1])
    assert (post_status, retry_after, get_status) == (503, "5", 503)
