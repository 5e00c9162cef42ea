"""`POST /api/v1/integrations/slack/interactions`: a reviewer's Approve/Reject click on a
Slack message (docs/slack.md).

Only Slack's signature authenticates the request (no session, no token, no CSRF token:
Slack sends none). The clicking Slack member acts as the console user an admin linked to
them, through the same decision service as the inbox, so role, scope, one vote per reviewer
and first-answer-wins hold alike. Slack wants a 200 within three seconds for every signed
click; what the reviewer reads goes to Slack's response_url after commit (the same message
is the body of the 200, which Slack ignores for block actions).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from uuid import UUID

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from approvals import services
from approvals.models import EscalationStatus, SlackIdentity, VoteOutcome
from approvals.notifications import schedule_slack_response
from approvals.selectors import get_escalation_for_user
from approvals.slack import (
    Click,
    decided_label,
    decided_message,
    ephemeral,
    parse_click,
    payload_invalid,
    verify_request,
)
from console.errors import Conflict, DomainError

logger = logging.getLogger(__name__)

UNLINKED = (
    "Your Slack account is not linked to a console reviewer, so nothing was decided. "
    "Ask a console admin to link your Slack member ID ({member})."
)


def _json(status: int, body: dict[str, Any], **headers: str) -> HttpResponse:
    return HttpResponse(
        json.dumps(body), status=status, content_type="application/json", headers=headers
    )


def _conflict(escalation: Any, exc: Conflict) -> dict[str, Any]:
    escalation.refresh_from_db()
    still_open = escalation.status == EscalationStatus.PENDING
    if still_open and escalation.expires_at > timezone.now():
        return ephemeral(f"Nothing decided: {exc}")  # e.g. you already voted
    return ephemeral(f"Nothing decided: already {decided_label(escalation)}.")


def answer_click(click: Click) -> dict[str, Any] | None:
    """Decide as the linked reviewer; the Slack message that answers the click (None: a
    button that decides nothing, such as "Review in console")."""
    if click.outcome is None:
        return None
    identity = SlackIdentity.objects.select_related("user").filter(
        slack_user_id=click.slack_user_id
    )
    user = identity[0].user if identity else None
    if user is None or not user.is_active:
        logger.info("approvals: Slack member %s is not linked to a reviewer", click.slack_user_id)
        return ephemeral(UNLINKED.format(member=click.slack_user_id))
    try:
        escalation = get_escalation_for_user(user, UUID(click.escalation_id), write=True)
    except ValueError:
        raise payload_invalid("The button's value is not an escalation id.") from None
    except Http404:
        return ephemeral(f"Nothing decided: {user.username} may not decide this escalation.")
    reason = f"Rejected from Slack by {user.username}" if click.outcome == "reject" else ""
    try:
        result = services.escalation_decide(
            escalation=escalation, actor=user, outcome=click.outcome, reason=reason
        )
    except Conflict as exc:
        return _conflict(escalation, exc)
    except DomainError as exc:  # forbidden or invalid: said to the clicker alone
        return ephemeral(f"Nothing decided: {exc}")
    if result.final:
        return decided_message(result.escalation)
    approvals = result.escalation.votes.filter(outcome=VoteOutcome.APPROVE).count()
    return ephemeral(f"Your approval counted ({approvals}/{result.escalation.approvals_required}).")


@csrf_exempt  # authenticated by Slack's signature alone; no cookie is read
@require_POST
def slack_interactions(request: HttpRequest) -> HttpResponse:
    body = request.body
    verify_request(
        secret=settings.CONSOLE_SLACK_SIGNING_SECRET,
        timestamp=request.headers.get("X-Slack-Request-Timestamp"),
        sent=request.headers.get("X-Slack-Signature"),
        body=body,
    )
    click = parse_click(body)
    message = answer_click(click)
    if message is None:
        return HttpResponse(status=200)
    schedule_slack_response(click.response_url, message)
    return _json(200, message)
