"""Celery tasks of the approvals app: thin wrappers that call services or send one webhook."""

from __future__ import annotations

import httpx
from celery import shared_task

from approvals import services
from approvals.notifications import (
    WEBHOOK_TIMEOUT_SECONDS,
    escalation_for_webhook,
    webhook_body,
)


class WebhookFailed(Exception):
    """The receiver answered with an error status; retried with backoff."""


@shared_task(name="approvals.tasks.escalation_expire_overdue")
def escalation_expire_overdue() -> int:
    return services.escalation_expire_overdue()


@shared_task(name="approvals.tasks.escalation_purge_payloads")
def escalation_purge_payloads() -> int:
    return services.escalation_purge_payloads()


@shared_task(
    name="approvals.tasks.escalation_notify_webhook",
    autoretry_for=(httpx.HTTPError, WebhookFailed),
    retry_backoff=2,
    retry_backoff_max=300,
    retry_jitter=False,
    max_retries=6,
)
def escalation_notify_webhook(escalation_id: str, event: str) -> int | None:
    escalation = escalation_for_webhook(escalation_id)
    if escalation is None or not escalation.agent.webhook_url:
        return None
    response = httpx.post(
        escalation.agent.webhook_url,
        json=webhook_body(escalation, event),
        timeout=WEBHOOK_TIMEOUT_SECONDS,
        follow_redirects=False,
    )
    if response.status_code >= 500 or response.status_code == 429:
        raise WebhookFailed(f"webhook answered {response.status_code}")
    return response.status_code
