"""The embedded beat runs each scheduled task at its interval, and survives a failing task."""

from __future__ import annotations

from datetime import timedelta

import pytest

from console.celery import app
from console.scheduler import EmbeddedBeat

CALLS: list[str] = []


@app.task(name="tests.scheduler_probe")
def scheduler_probe() -> None:
    CALLS.append("probe")


@app.task(name="tests.scheduler_boom")
def scheduler_boom() -> None:
    CALLS.append("boom")
    raise RuntimeError("boom")


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def test_runs_due_tasks_once_per_interval_and_survives_failures(db):
    beat = EmbeddedBeat(
        {
            "probe": {"task": "tests.scheduler_probe", "schedule": timedelta(seconds=10)},
            "boom": {"task": "tests.scheduler_boom", "schedule": 5.0},
        }
    )
    due: dict[str, float] = {}
    beat.run_due(due, now=100.0)
    beat.run_due(due, now=104.0)
    beat.run_due(due, now=105.0)
    beat.run_due(due, now=110.0)
    assert CALLS.count("probe") == 2
    assert CALLS.count("boom") == 3


def test_unknown_schedule_shape_is_refused():
    with pytest.raises(ValueError, match="Unsupported schedule"):
        EmbeddedBeat({"x": {"task": "tests.scheduler_probe", "schedule": "daily"}})


def test_every_scheduled_task_of_the_project_is_registered():
    from django.conf import settings

    beat = EmbeddedBeat(settings.CELERY_BEAT_SCHEDULE)
    assert beat.entries
    for _name, task_name, _interval in beat.entries:
        assert task_name in app.tasks, task_name
