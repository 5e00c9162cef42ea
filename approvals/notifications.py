"""Per-agent webhook notifications: what is sent, and how it is scheduled.

The body carries metadata only (agent, tool, status, who, when, a link): never arguments,
context or transcript. `json` posts the generic object; `slack` posts `{"text": ...}`.
Scheduling happens after commit and never blocks or fails the caller. Sending goes through
console.outbound: public addresses only (checked again at each send), no redirects.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from uuid import UUID

import httpx
from django.conf import settings
from django.db import transaction

from approvals.models import Escalation
from console.outbound import OutboundRefused, post_json

logger = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_SECONDS = 5.0


def webhook_body(escalation: Escalation, event: str) -> dict[str, Any]:
    agent = escalation.agent
    link = f"{settings.SITE_URL.rstrip('/')}/approvals/"
    facts: dict[str, Any] = {
        "event": event,
        "escalation": str(escalation.pk),
        "agent": agent.slug,
        "custom_agent": escalation.custom_agent_name or None,
        "tool_name": escalation.tool_name or None,
        "hook": escalation.hook_key or None,
        "status": escalation.status,
        "approvals_required": escalation.approvals_required,
        "expires_at": escalation.expires_at.isoformat(),
        "decided_by": escalation.decided_by_label or None,
        "decided_at": escalation.decided_at.isoformat() if escalation.decided_at else None,
        "url": link,
    }
    if agent.webhook_format != "slack":
        return facts
    what = escalation.tool_name or escalation.interception_point
    where = agent.slug + (
        f"/{escalation.custom_agent_name}" if escalation.custom_agent_name else ""
    )
    if event == "escalation.created":
        text = f"Approval needed: {what} on {where} (expires {facts['expires_at']}). {link}"
    else:
        who = f" by {escalation.decided_by_label}" if escalation.decided_by_label else ""
        text = f"Escalation {what} on {where}: {escalation.status}{who}. {link}"
    return {"text": text}


def _enqueue(escalation_id: str, event: str) -> None:
    from approvals.tasks import escalation_notify_webhook

    try:
        escalation_notify_webhook.delay(escalation_id, event)
    except Exception as exc:  # broker down: the decision stands; the webhook is best effort
        logger.warning("approvals: could not queue webhook (%s: %s)", type(exc).__name__, exc)


def schedule_webhook(escalation: Escalation, event: str) -> None:
    """Queue the webhook after commit, if the agent has one."""
    if not escalation.agent.webhook_url:
        return
    escalation_id = str(escalation.pk)

    def send() -> None:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # Embedded default: tasks run in-process; keep the request path free of HTTP.
            threading.Thread(target=_enqueue, args=(escalation_id, event), daemon=True).start()
        else:
            _enqueue(escalation_id, event)

    transaction.on_commit(send)


def escalation_for_webhook(escalation_id: UUID | str) -> Escalation | None:
    return Escalation.objects.select_related("agent").filter(pk=escalation_id).first()


def webhook_send(escalation: Escalation, event: str) -> httpx.Response | None:
    """POST the event to the agent's webhook; None when there is none or its destination is
    refused (logged, not retried). httpx errors propagate for the task to retry."""
    url = escalation.agent.webhook_url
    if not url:
        return None
    try:
        return post_json(url, webhook_body(escalation, event), timeout=WEBHOOK_TIMEOUT_SECONDS)
    except OutboundRefused as exc:
        logger.warning("approvals: webhook of %s not sent: %s", escalation.agent.slug, exc)
        return None
