"""Celery tasks of the approvals app: thin wrappers that call services or send one webhook."""

from __future__ import annotations

from typing import Any

import httpx
from celery import shared_task

from approvals import services
from approvals.notifications import escalation_for_webhook, slack_response_send, webhook_send


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
    response = webhook_send(escalation, event) if escalation is not None else None
    if response is None:
        return None
    if response.status_code >= 500 or response.status_code == 429:
        raise WebhookFailed(f"webhook answered {response.status_code}")
    return response.status_code


@shared_task(
    name="approvals.tasks.slack_respond",
    autoretry_for=(httpx.HTTPError, WebhookFailed),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=False,
    max_retries=3,  # a response_url lives 30 minutes
)
def slack_respond(response_url: str, message: dict[str, Any]) -> int | None:
    response = slack_response_send(response_url, message)
    if response is None:
        return None
    if response.status_code >= 500 or response.status_code == 429:
        raise WebhookFailed(f"Slack answered {response.status_code}")
    return response.status_code
