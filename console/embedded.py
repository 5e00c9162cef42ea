"""The embedded default, named: every "are we embedded?" branch of the code asks here.

`make run` sets neither DATABASE_URL nor REDIS_URL (console.settings): the database is
SQLite, the channel layer lives in the server process, Celery tasks run in-process
(eager) and the periodic tasks run in a thread of the web process (console.scheduler).
Those paths differ from the PostgreSQL/Redis ones (portable ingest and export, chain
sealing, percentiles, the event-loop hop of approvals.live, webhooks in a thread), so
`make test` runs the unit, API and portal tests on them too (tests/run_lanes.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import Any

from celery import Task
from celery.exceptions import Retry
from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.db import connection as default_connection
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)


def database_is_postgresql(connection: BaseDatabaseWrapper | None = None) -> bool:
    """PostgreSQL (COPY, arrays, row locks, percentiles in SQL) rather than SQLite."""
    return (connection or default_connection).vendor == "postgresql"


def tasks_in_process() -> bool:
    """Celery tasks run eagerly in the calling process (no broker, no worker)."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER)


def beat_in_process() -> bool:
    """No Celery beat: `run_console` runs the periodic tasks in a thread (console.scheduler)."""
    return not settings.REDIS_URL


def channel_layer_in_process(layer: Any) -> bool:
    """The channel layer lives in this process, bound to the server's event loop."""
    return isinstance(layer, InMemoryChannelLayer)


def _retry_delay(retry: Retry) -> float:
    when = retry.when
    if isinstance(when, dt.datetime):
        return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())
    return float(when or 0)


def _run_with_retries(task: Task, *args: Any) -> None:
    """Run `task` here, honouring its own retry policy (autoretry_for, retry_backoff,
    max_retries) with real waits. An eager `apply()` either retries at once, without the
    backoff, or (tasks propagating errors, as configured) not at all."""
    retries = 0
    try:
        while True:
            try:
                task.apply(args=args, retries=retries, throw=True)
                return
            except Retry as retry:
                retries += 1
                time.sleep(_retry_delay(retry))
    except Exception as exc:  # out of retries, or not retryable: logged like a worker would
        logger.warning("task %s failed (%s: %s)", task.name, type(exc).__name__, exc)
    finally:
        connections.close_all()  # this thread's own connections


def task_run_in_thread(task: Task, *args: Any) -> threading.Thread:
    """Run `task` in a daemon thread (with its retries), off the request path."""
    thread = threading.Thread(
        target=_run_with_retries, args=(task, *args), name=f"task-{task.name}", daemon=True
    )
    thread.start()
    return thread
