"""The embedded default's stand-in for Celery beat.

With no Redis there is no beat process: `run_console` starts this thread, which runs each
entry of CELERY_BEAT_SCHEDULE in-process at its interval. With Redis, `celery beat` does it.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any

from django.db import close_old_connections

from console.celery import app

logger = logging.getLogger(__name__)


def _seconds(schedule: Any) -> float:
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    if isinstance(schedule, int | float):
        return float(schedule)
    run_every = getattr(schedule, "run_every", None)  # celery.schedules.schedule
    if isinstance(run_every, timedelta):
        return run_every.total_seconds()
    raise ValueError(f"Unsupported schedule for the embedded scheduler: {schedule!r}")


class EmbeddedBeat(threading.Thread):
    def __init__(self, schedule: dict[str, dict[str, Any]], *, tick: float = 1.0) -> None:
        super().__init__(name="embedded-beat", daemon=True)
        # Celery discovers the apps' tasks.py lazily; load them so lookups by name succeed.
        app.loader.import_default_modules()
        self.entries = [
            (name, entry["task"], _seconds(entry["schedule"])) for name, entry in schedule.items()
        ]
        self.tick = tick
        self.stopped = threading.Event()

    def run_due(self, due: dict[str, float], now: float) -> None:
        for name, task_name, interval in self.entries:
            if now < due.get(name, 0.0):
                continue
            due[name] = now + interval
            try:
                app.tasks[task_name].apply()
            except Exception:
                logger.exception("embedded beat: task %s (%s) failed", name, task_name)
            finally:
                close_old_connections()

    def run(self) -> None:
        due: dict[str, float] = {}
        while not self.stopped.is_set():
            self.run_due(due, time.monotonic())
            self.stopped.wait(self.tick)

    def stop(self) -> None:
        self.stopped.set()
