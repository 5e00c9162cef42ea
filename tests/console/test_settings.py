"""The one env-driven settings file: embedded default with nothing set, PostgreSQL/Redis
from URLs, production (`DEBUG=0`) clean under `manage.py check --deploy`, bad values refused
with ImproperlyConfigured naming the variable."""

from __future__ import annotations

import os
import runpy
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "console" / "settings.py"
# Every variable the settings read; each test starts from none of them set.
SETTINGS_VARS = [
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "SITE_URL",
    "DATABASE_URL",
    "DATABASE_POOL_MAX",
    "DATABASE_TRANSACTION_POOLING",
    "DATABASE_REPLICA_URL",
    "SQLITE_PATH",
    "REDIS_URL",
    "CHANNELS_PREFIX",
    "CELERY_TASK_ALWAYS_EAGER",
    "STATIC_ROOT",
    "MAX_BODY_BYTES",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "LOG_LEVEL",
]


def _secret() -> str:
    return secrets.token_urlsafe(64)


def _load(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    """Execute console/settings.py afresh under exactly `env`."""
    for name in SETTINGS_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS))


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SETTINGS_VARS}
    env.update(extra)
    return env


def test_nothing_set_is_the_embedded_default(monkeypatch):
    settings = _load(monkeypatch)
    assert settings["DEBUG"] is True
    assert settings["DATABASES"]["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert settings["CHANNEL_LAYERS"]["default"]["BACKEND"].endswith("InMemoryChannelLayer")
    assert settings["CELERY_TASK_ALWAYS_EAGER"] is True
    assert settings["MAX_BODY_BYTES"] == 1024 * 1024


def test_database_and_redis_urls_switch_to_postgresql_and_redis(monkeypatch):
    settings = _load(
        monkeypatch,
        DATABASE_URL="postgres://console:pw@db.internal:5432/console",
        REDIS_URL="redis://cache.internal:6379/3",
    )
    database = settings["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["HOST"], database["NAME"]) == ("db.internal", "console")
    layer = settings["CHANNEL_LAYERS"]["default"]
    assert layer["BACKEND"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    hosts = [h["address"] if isinstance(h, dict) else h for h in layer["CONFIG"]["hosts"]]
    assert hosts == ["redis://cache.internal:6379/3"]
    assert settings["CELERY_BROKER_URL"] == "redis://cache.internal:6379/3"
    assert settings["CELERY_TASK_ALWAYS_EAGER"] is False


def test_transaction_pooling_and_a_read_replica(monkeypatch):
    settings = _load(
        monkeypatch,
        DATABASE_URL="postgres://console:pw@pgbouncer.internal:6432/console?sslmode=require",
        DATABASE_REPLICA_URL="postgres://console:pw@replica.internal:5432/console",
        DATABASE_TRANSACTION_POOLING="1",
    )
    default, replica = settings["DATABASES"]["default"], settings["DATABASES"]["replica"]
    assert (default["HOST"], replica["HOST"]) == ("pgbouncer.internal", "replica.internal")
    # `.iterator()` must not leave a WITH HOLD cursor on a session the pooler hands on.
    assert default["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert replica["DISABLE_SERVER_SIDE_CURSORS"] is True
    # The URL's own options stay beside the pool.
    assert default["OPTIONS"]["sslmode"] == "require"
    assert default["OPTIONS"]["pool"]["max_size"] == 64
    # Django opens psycopg connections with prepare_threshold=None unless told otherwise: no
    # prepared statement, which would live in one server session.
    assert "prepare_threshold" not in default["OPTIONS"]
    assert "prepare_threshold" not in replica["OPTIONS"]
    # Tests run against one database: the replica alias reads the test database.
    assert replica["TEST"] == {"MIRROR": "default"}


def test_without_pooling_or_replica_one_alias_as_before(monkeypatch):
    settings = _load(monkeypatch, DATABASE_URL="postgres://console:pw@db.internal:5432/console")
    assert list(settings["DATABASES"]) == ["default"]
    assert not settings["DATABASES"]["default"]["DISABLE_SERVER_SIDE_CURSORS"]
    # Prepared statements where console.prepared asks for them, and nowhere by themselves.
    threshold = settings["DATABASES"]["default"]["OPTIONS"]["prepare_threshold"]
    assert threshold == settings["PREPARE_ONLY_WHEN_ASKED"] >= 2**31 - 1
    # Without the pool each request opens its own session: preparing would cost a round trip
    # that no later call gains back.
    unpooled = _load(
        monkeypatch,
        DATABASE_URL="postgres://console:pw@db.internal:5432/console",
        DATABASE_POOL_MAX="0",
    )
    assert "prepare_threshold" not in unpooled["DATABASES"]["default"].get("OPTIONS", {})


def test_replica_needs_a_postgresql_primary_and_url(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_REPLICA_URL"):
        _load(monkeypatch, DATABASE_REPLICA_URL="postgres://replica.internal:5432/console")
    with pytest.raises(ImproperlyConfigured, match="DATABASE_REPLICA_URL"):
        _load(
            monkeypatch,
            DATABASE_URL="postgres://db.internal:5432/console",
            DATABASE_REPLICA_URL="mysql://replica.internal:3306/console",
        )


def test_production_without_secret_key_is_refused(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        _load(monkeypatch, DEBUG="0", ALLOWED_HOSTS="console.example.com")


def test_production_without_allowed_hosts_is_refused(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="ALLOWED_HOSTS"):
        _load(monkeypatch, DEBUG="0", SECRET_KEY=_secret())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_BODY_BYTES", "abc"),
        ("MAX_BODY_BYTES", "10"),
        ("DEBUG", "maybe"),
        ("CELERY_TASK_ALWAYS_EAGER", "sometimes"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("LOG_LEVEL", "LOUD"),
        ("CONSOLE_AGENT_RATE_LIMIT", "lots"),
        ("DATABASE_POOL_MAX", "-1"),
        ("DATABASE_TRANSACTION_POOLING", "pgbouncer"),
        ("DATABASE_REPLICA_URL", "postgres://replica.internal:5432/console"),
    ],
)
def test_bad_value_is_refused_naming_the_variable(monkeypatch, name, value):
    env = {"SECRET_KEY": _secret(), "ALLOWED_HOSTS": "x.example.com", name: value}
    if name == "SECURE_HSTS_SECONDS":
        env["DEBUG"] = "0"
    if name == "CELERY_TASK_ALWAYS_EAGER":
        env["REDIS_URL"] = "redis://127.0.0.1:6379/2"
    with pytest.raises(ImproperlyConfigured, match=name):
        _load(monkeypatch, **env)


def test_production_is_https_only(monkeypatch):
    settings = _load(monkeypatch, DEBUG="0", SECRET_KEY=_secret(), ALLOWED_HOSTS="c.example.com")
    assert settings["SECURE_SSL_REDIRECT"] is True
    assert settings["SESSION_COOKIE_SECURE"] is True
    assert settings["CSRF_COOKIE_SECURE"] is True
    assert settings["SECURE_HSTS_SECONDS"] >= 31536000
    assert "console.async_middleware.StaticFilesMiddleware" in settings["MIDDLEWARE"]


def test_production_settings_pass_check_deploy_with_no_warnings(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_env(
            DEBUG="0",
            SECRET_KEY=_secret(),
            ALLOWED_HOSTS="console.example.com",
            SQLITE_PATH=str(tmp_path / "db.sqlite3"),
        ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stderr


PRODUCTION_STATIC_PROBE = """
import django
from django.core.management import call_command
django.setup()
from django.test import Client
# The big vendored bundles only cost compression time here; production collects them all.
call_command(
    "collectstatic", "--noinput", verbosity=0,
    ignore_patterns=["*.map", "redoc", "admin", "swagger-ui-bundle.js", "*-preset.js"],
)
client = Client()
css = client.get("/static/css/console.css", secure=True)
print("css", css.status_code, css.get("Content-Type"))
docs = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css", secure=True)
print("swagger", docs.status_code)
plain = client.get("/static/css/console.css")
print("plain", plain.status_code, plain.get("Location"))
health = client.get("/healthz")
print("healthz", health.status_code)
"""


def test_production_serves_collected_static_files_and_plain_http_health(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", PRODUCTION_STATIC_PROBE],
        cwd=ROOT,
        env=_env(
            DJANGO_SETTINGS_MODULE="console.settings",
            DEBUG="0",
            SECRET_KEY=_secret(),
            ALLOWED_HOSTS="testserver",
            STATIC_ROOT=str(tmp_path / "static"),
            SQLITE_PATH=str(tmp_path / "db.sqlite3"),
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert lines["css"].startswith("200 text/css")
    assert lines["swagger"] == "200"
    assert lines["plain"] == "301 https://testserver/static/css/console.css"
    assert lines["healthz"] == "200"
