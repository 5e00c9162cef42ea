"""One env-driven settings file.

Nothing set: the embedded default (SQLite, in-memory channel layer, Celery tasks run
in-process). `DATABASE_URL` switches to PostgreSQL, `REDIS_URL` to channels-redis and
Celery on Redis. `DEBUG=0` is production: `SECRET_KEY` and `ALLOWED_HOSTS` are required.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from console.dbpool import check_connection

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (0/1/true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG=0")
    SECRET_KEY = "django-insecure-embedded-default-only-for-local-development"  # noqa: S105
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver" if DEBUG else "")
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is required when DEBUG=0")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "daphne",
    "console.admin_site.ConsoleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "channels",
    "axes",
    "console",
    "console.governance",
    "agents",
    "approvals",
    "audit",
    "users",
    # The adapters for other agent runtimes, above the apps (agents, approvals, audit).
    "runtimes",
    # The demo of `make run` (seed and demo agent commands); nothing in the apps imports it.
    "demo",
]

# Django's own middleware, each as a console.async_middleware subclass: the same in the sync
# chain; in the async views' chain their hooks run without a thread hop each. Django's
# checks for three of them want the exact paths; console.E001-E003 check them instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]
MIDDLEWARE = [
    "console.request_id.RequestIdMiddleware",
    "console.async_middleware.SecurityMiddleware",
    "console.middleware.BodySizeLimitMiddleware",
    "console.middleware.NulByteGuardMiddleware",
    "console.async_middleware.SessionMiddleware",
    "console.async_middleware.CommonMiddleware",
    "console.async_middleware.CsrfViewMiddleware",
    "console.async_middleware.AuthenticationMiddleware",
    "console.async_middleware.MessageMiddleware",
    "console.async_middleware.XFrameOptionsMiddleware",
    "console.async_middleware.ContentSecurityPolicyMiddleware",
    "axes.middleware.AxesMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.middleware.DomainErrorMiddleware",
]

ROOT_URLCONF = "console.urls"
ASGI_APPLICATION = "console.asgi.application"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "console.context_processors.console_nav",
                "approvals.context_processors.approvals_nav",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
DATABASE_POOL_MAX = env_int("DATABASE_POOL_MAX", 64)
# The database URLs point at a pooler in transaction mode (PgBouncer `pool_mode =
# transaction`): consecutive transactions of one connection may run on different server
# sessions, so nothing may outlive a transaction on the server.
DATABASE_TRANSACTION_POOLING = env_bool("DATABASE_TRANSACTION_POOLING", False)
# A streaming replica (hot standby) of DATABASE_URL: the record search (API and explorer)
# and the record export read from it (audit.selectors.search_database); nothing else does.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")


PREPARE_ONLY_WHEN_ASKED = 2**31 - 1


def postgresql_database(url: str, name: str) -> dict[str, Any]:
    """The alias of `url` (env variable `name`); PostgreSQL gets the console's pool and,
    behind a transaction pooler, what transaction pooling needs."""
    database: dict[str, Any] = dict(dj_database_url.parse(url))
    if database["ENGINE"] != "django.db.backends.postgresql":
        if name == "DATABASE_URL":
            return database  # another engine: as dj-database-url reads it
        raise ImproperlyConfigured(f"{name} must be a postgres:// URL")
    options: dict[str, Any] = dict(database.get("OPTIONS") or {})  # e.g. ?sslmode=require
    if DATABASE_POOL_MAX:
        # Under ASGI every request would otherwise open a new PostgreSQL session (or, behind
        # PgBouncer, a new client connection to it).
        options["pool"] = {
            "min_size": 1,
            "max_size": DATABASE_POOL_MAX,
            "timeout": 10,
            # After a PostgreSQL restart, pooled sessions are dead: test each one on checkout
            # rather than fail the request that gets it (bench/faults, tests/faults); the
            # check costs no round trip while the socket is quiet (console/dbpool.py).
            "check": check_connection,
        }
    if DATABASE_TRANSACTION_POOLING:
        # `.iterator()` would DECLARE a cursor WITH HOLD, which lives in one server session.
        # (Prepared statements, the other session-bound thing, stay off: Django opens psycopg
        # connections with prepare_threshold=None unless OPTIONS asks otherwise.)
        database["DISABLE_SERVER_SIDE_CURSORS"] = True
    elif DATABASE_POOL_MAX:
        # Prepared statements allowed (a pooled session lives on), and made only where asked:
        # console.prepared's hot reads ask for them. Django's own cursors bind on the client
        # and never prepare; for the others (record ingest's) the threshold is out of reach.
        options.setdefault("prepare_threshold", PREPARE_ONLY_WHEN_ASKED)
    if options:
        database["OPTIONS"] = options
    return database


if DATABASE_URL:
    DATABASES = {"default": postgresql_database(DATABASE_URL, "DATABASE_URL")}
    if DATABASE_REPLICA_URL:
        # Tests run against one database: the replica alias mirrors the test database.
        DATABASES["replica"] = {
            **postgresql_database(DATABASE_REPLICA_URL, "DATABASE_REPLICA_URL"),
            "TEST": {"MIRROR": "default"},
        }
else:
    if DATABASE_REPLICA_URL:
        raise ImproperlyConfigured("DATABASE_REPLICA_URL needs DATABASE_URL (the primary)")
    (BASE_DIR / "var").mkdir(exist_ok=True)
    SQLITE_PATH = Path(env_str("SQLITE_PATH", str(BASE_DIR / "var" / "console.sqlite3")))
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(SQLITE_PATH),
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
            # Tests use a file beside it, as `make run` does: an in-memory database shares
            # one cache between threads, whose table locks fail at once instead of waiting.
            "TEST": {"NAME": str(SQLITE_PATH.with_name(f"test_{SQLITE_PATH.name}"))},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    # Redis pub/sub: the layer carries wake-ups only (at most once; PostgreSQL holds every
    # fact, approvals.live), so it needs none of the core layer's per-message lists and
    # BZPOPMIN polling, which cost ~1 ms a hop more (docs/benchmarks.md, "Eighth pass").
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
                "prefix": env_str("CHANNELS_PREFIX", "console"),
            },
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    # "Test this hook" polls its task's result (agents.tasks.hook_test_run_task).
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_RESULT_EXPIRES = 3600
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"pool_class": "console.cachepool.SharedConnectionPool"},
        }
    }
    CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CELERY_BROKER_URL = "memory://"
    CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
AUTHENTICATION_BACKENDS = [
    "console.auth_backends.LockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Lock a username+address pair out after repeated failed logins.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# A refused CSRF check shows the console's own 403 page, in DEBUG too.
CSRF_FAILURE_VIEW = "console.views.csrf_failure"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))

# Request bodies over this size are refused with 413 before they are parsed.
MAX_BODY_BYTES = env_int("MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES

AGENT_RATE_LIMIT = env_str("CONSOLE_AGENT_RATE_LIMIT", "6000/min")
if not re.fullmatch(r"[1-9][0-9]*/(s|sec|m|min|h|hour|d|day)", AGENT_RATE_LIMIT):
    raise ImproperlyConfigured(
        f"CONSOLE_AGENT_RATE_LIMIT must look like 6000/min (n/s, n/min, n/hour, n/day), got {AGENT_RATE_LIMIT!r}"
    )

# Who resolves a bearer token, tried in order (console.auth.BearerTokenAuthentication).
CONSOLE_TOKEN_RESOLVERS = [
    "agents.auth.agent_token_resolve",
    "console.auth.personal_token_resolve",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "console.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "console.api.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["console.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["console.throttles.AgentTokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"agent": AGENT_RATE_LIMIT},
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent governance console API",
    "DESCRIPTION": "Hook configuration (REST v2), declarations, escalations and audit records.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A hook's mode and an agent's mode are both "mode": name the hook's enum apart.
    "ENUM_NAME_OVERRIDES": {"HookModeEnum": "agents.hook_names.HOOK_MODES"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "approvals.openapi.document_longpoll",
        "runtimes.openapi.document_runtime_hooks",
        "audit.openapi.document_batch_bounds",
        "console.openapi.close_request_objects",
        # Last: adds the error answers every operation can give, the long-poll's too.
        "console.openapi.document_common_errors",
    ],
}

# Console behaviour.
CONSOLE_DEFAULT_ESCALATION_SECONDS = env_int("CONSOLE_DEFAULT_ESCALATION_SECONDS", 600, minimum=1)
CONSOLE_ESCALATION_PURGE_DAYS = env_int("CONSOLE_ESCALATION_PURGE_DAYS", 7, minimum=0)
CONSOLE_RECORD_RETENTION_DAYS = env_int("CONSOLE_RECORD_RETENTION_DAYS", 400, minimum=1)
# PostgreSQL: monthly record partitions are created this many months ahead (audit.partitions).
CONSOLE_RECORD_PARTITIONS_AHEAD = env_int("CONSOLE_RECORD_PARTITIONS_AHEAD", 3, minimum=1)
CONSOLE_LONGPOLL_MAX_SECONDS = env_int("CONSOLE_LONGPOLL_MAX_SECONDS", 60, minimum=1)
# The reviewer inbox shows at most this many open escalations at once (approvals.selectors).
CONSOLE_INBOX_ROWS = env_int("CONSOLE_INBOX_ROWS", 100, minimum=1)
# Webhooks go only to public addresses unless this is set (console.outbound).
CONSOLE_WEBHOOK_ALLOW_PRIVATE = env_bool("CONSOLE_WEBHOOK_ALLOW_PRIVATE", False)
# Command hooks one console process runs at once for other agent runtimes
# (POST /api/v1/hooks/{runtime}); more calls wait for a free slot.
CONSOLE_HOOK_CONCURRENCY = env_int("CONSOLE_HOOK_CONCURRENCY", 4, minimum=1)
# The one-line install of `console-hook` the "Connect an agent" page shows.
CONSOLE_HOOK_INSTALL = env_str("CONSOLE_HOOK_INSTALL", "pipx install agent-governance-console")
# Slack interactivity (docs/slack.md): requests to /api/v1/integrations/slack/interactions
# are verified with this app secret; unset, every such request is refused (401) and Slack
# messages carry no Approve/Reject buttons.
CONSOLE_SLACK_SIGNING_SECRET = env_str("CONSOLE_SLACK_SIGNING_SECRET")
# Where Slack's response_url may point; the console posts its answers to a reviewer only there.
CONSOLE_SLACK_RESPONSE_URL_PREFIX = "https://hooks.slack.com/"
# Record ingest answers 503 + Retry-After rather than wait longer than this for the database.
CONSOLE_RECORD_INGEST_LOCK_TIMEOUT_MS = env_int(
    "CONSOLE_RECORD_INGEST_LOCK_TIMEOUT_MS", 2000, minimum=1
)
CONSOLE_RECORD_INGEST_STATEMENT_TIMEOUT_MS = env_int(
    "CONSOLE_RECORD_INGEST_STATEMENT_TIMEOUT_MS", 15000, minimum=1
)

# Periodic tasks (celery beat with Redis; console.scheduler in-process otherwise). Seconds.
CELERY_BEAT_SCHEDULE = {
    "audit-records-seal-chain": {"task": "audit.tasks.records_seal_chain", "schedule": 30.0},
    "audit-records-purge-expired": {
        "task": "audit.tasks.records_purge_expired",
        "schedule": 3600.0,
    },
    "audit-records-partitions": {
        "task": "audit.tasks.records_partitions_ensure",
        "schedule": 86400.0,
    },
    "approvals-expire-overdue": {
        "task": "approvals.tasks.escalation_expire_overdue",
        "schedule": float(env_int("CONSOLE_EXPIRY_SWEEP_SECONDS", 10, minimum=1)),
    },
    "approvals-purge-payloads": {
        "task": "approvals.tasks.escalation_purge_payloads",
        "schedule": 3600.0,
    },
}

# Scripts run only from our origin or with the per-request nonce; no inline handlers, no eval.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # Health probes from inside the container network speak plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    # daphne serves no static files: WhiteNoise serves what collectstatic gathered.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("console.async_middleware.SecurityMiddleware") + 1,
        "console.async_middleware.StaticFilesMiddleware",  # WhiteNoise, async capable
    )
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    }

LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "daphne": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},
        "celery.app.trace": {"level": "WARNING"},
    },
}
