"""The Celery app. On the embedded default tasks run in-process (CELERY_TASK_ALWAYS_EAGER).

A task published during a request carries its request id (console.request_id)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import before_task_publish, task_postrun, task_prerun

from console.request_id import (
    task_bind_request_id,
    task_publish_request_id,
    task_unbind_request_id,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

before_task_publish.connect(task_publish_request_id, weak=False)
task_prerun.connect(task_bind_request_id, weak=False)
task_postrun.connect(task_unbind_request_id, weak=False)
