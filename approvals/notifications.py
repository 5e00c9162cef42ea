"""Per-agent webhook notifications: what is sent, and how it is scheduled.

The body carries metadata only (agent, tool, status, who, when, links): never arguments,
context or transcript. `json` posts the generic object, with a signed decision link
(approvals/links.py); `slack` posts a Block Kit message with Approve/Reject buttons for a new
escalation (approvals/slack.py) and `{"text": ...}` for the rest. The answers to a Slack
click go to Slack's response_url the same way. Scheduling happens after commit and never
blocks or fails the caller. Sending goes through console.outbound: public addresses only
(checked again at each send), no redirects.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

import httpx
from django.conf import settings
from django.db import transaction

from agents.models import WebhookFormat
from approvals.links import decision_link_url
from approvals.models import Escalation
from approvals.slack import approval_message
from console import embedded
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
        # Opens the call after a login, for reviewers of its agent only; once decided it
        # shows the decision.
        "decide_url": decision_link_url(escalation),
    }
    if agent.webhook_format != WebhookFormat.SLACK:
        return facts
    if event == "escalation.created":
        buttons = bool(settings.CONSOLE_SLACK_SIGNING_SECRET)
        return approval_message(escalation, link=facts["decide_url"], buttons=buttons)
    what = escalation.tool_name or escalation.interception_point
    where = agent.slug + (
        f"/{escalation.custom_agent_name}" if escalation.custom_agent_name else ""
    )
    who = f" by {escalation.decided_by_label}" if escalation.decided_by_label else ""
    return {"text": f"Escalation {what} on {where}: {escalation.status}{who}. {link}"}


def _after_commit(task_name: str, *args: str | dict[str, Any]) -> None:
    def send() -> None:
        from approvals import tasks

        task = getattr(tasks, task_name)
        if embedded.tasks_in_process():
            # No worker: a thread sends (and retries with backoff) off the request path.
            embedded.task_run_in_thread(task, *args)
            return
        try:
            task.delay(*args)
        except Exception as exc:  # broker down: the decision stands; the webhook is best effort
            logger.warning(
                "approvals: could not queue %s (%s: %s)", task_name, type(exc).__name__, exc
            )

    transaction.on_commit(send)


def schedule_webhook(escalation: Escalation, event: str) -> None:
    """Queue the webhook after commit, if the agent has one."""
    if escalation.agent.webhook_url:
        _after_commit("escalation_notify_webhook", str(escalation.pk), event)


def slack_response_url_allowed(url: str) -> bool:
    return bool(url) and url.startswith(settings.CONSOLE_SLACK_RESPONSE_URL_PREFIX)


def schedule_slack_response(response_url: str, message: dict[str, Any]) -> None:
    """Queue the answer to a Slack click for its response_url (Slack's own host only)."""
    if slack_response_url_allowed(response_url):
        _after_commit("slack_respond", response_url, message)


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


def slack_response_send(response_url: str, message: dict[str, Any]) -> httpx.Response | None:
    """POST the answer to a click; None when the URL is not Slack's or is refused."""
    if not slack_response_url_allowed(response_url):
        return None
    try:
        return post_json(response_url, message, timeout=WEBHOOK_TIMEOUT_SECONDS)
    except OutboundRefused as exc:
        logger.warning("approvals: Slack answer not sent: %s", exc)
        return None
