from __future__ import annotations

from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks with the app now: the embedded beat (no worker, so no
        # autodiscovery) looks them up by name.
        from approvals import tasks  # noqa: F401
