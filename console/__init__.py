"""The console project: settings, routing, auth and roles, Celery app, shared API errors."""

from console.celery import app as celery_app

__all__ = ["celery_app"]
