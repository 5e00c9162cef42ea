"""Slack: the Block Kit approval message, Slack's request signature, and the interaction
payload of an Approve/Reject click (docs/slack.md).

Slack signs each request to the interactivity URL: `X-Slack-Signature: v0=<hex>` is the
HMAC-SHA256, keyed with the app's signing secret, of `v0:{X-Slack-Request-Timestamp}:{raw
body}`; a timestamp more than five minutes from now is refused as a possible replay. The
body is form-encoded with one `payload` field holding JSON.

Messages carry metadata only (agent, tool, hook, expiry), as every webhook body does: never
arguments, context or transcript. Text that comes from agents is escaped for mrkdwn, so it
cannot mention people or channels or forge links.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from approvals.models import Escalation, EscalationStatus
from console.errors import InvalidInput, NotAuthenticated

VERSION = "v0"
MAX_SKEW_SECONDS = 5 * 60
APPROVE, REJECT, OPEN = "escalation_approve", "escalation_reject", "escalation_open"
DECIDING_ACTIONS = {APPROVE: "approve", REJECT: "reject"}


def _refused(message: str) -> NotAuthenticated:
    """Unsigned, wrongly signed or stale: answered 401, nothing read from the body."""
    return NotAuthenticated(message, headers={"WWW-Authenticate": 'Signature realm="slack"'})


def payload_invalid(message: str) -> InvalidInput:
    """Signed by Slack but not an interaction this endpoint understands: 400."""
    return InvalidInput(message, fields={"/payload": [message]})


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = f"{VERSION}:{timestamp}:".encode() + body
    return f"{VERSION}=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify_request(
    *, secret: str, timestamp: str | None, sent: str | None, body: bytes, now: float | None = None
) -> None:
    """Raise NotAuthenticated unless Slack signed exactly this body within five minutes."""
    if not secret:
        raise _refused("Slack interactivity is not configured on this console.")
    if not timestamp or not sent:
        raise _refused("The request is not signed.")
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise _refused("The request timestamp is not a Unix time.")
    now = time.time() if now is None else now
    if abs(now - int(timestamp)) > MAX_SKEW_SECONDS:
        raise _refused("The request is stale (more than five minutes from now).")
    if not hmac.compare_digest(signature(secret, timestamp, body).encode(), sent.encode()):
        raise _refused("The request signature does not match.")


@dataclass(frozen=True)
class Click:
    """One button press: who (Slack member), which button, on which escalation."""

    slack_user_id: str
    action_id: str
    escalation_id: str
    response_url: str

    @property
    def outcome(self) -> str | None:
        return DECIDING_ACTIONS.get(self.action_id)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_click(body: bytes) -> Click:
    """The block_actions payload of a signed request; InvalidInput for anything else."""
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True)
        payload = json.loads(fields["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError):
        raise payload_invalid("Expected a form body with a JSON `payload` field.") from None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        raise payload_invalid("Only block_actions payloads (message buttons) are handled.")
    user = payload.get("user")
    actions = payload.get("actions")
    if not isinstance(user, dict) or not _text(user.get("id")):
        raise payload_invalid("The payload names no Slack user.")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        raise payload_invalid("The payload holds no action.")
    action = actions[0]
    return Click(
        slack_user_id=_text(user.get("id")),
        action_id=_text(action.get("action_id")),
        escalation_id=_text(action.get("value")),
        response_url=_text(payload.get("response_url")),
    )


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn (mentions and links start with `<`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _what_where(escalation: Escalation) -> tuple[str, str]:
    what = escalation.tool_name or escalation.interception_point
    where = escalation.agent.slug + (
        f"/{escalation.custom_agent_name}" if escalation.custom_agent_name else ""
    )
    return what, where


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": text[:limit]}


def _confirm(title: str, text: str, button: str, style: str) -> dict[str, Any]:
    return {
        "title": _plain(title, 100),
        "text": _plain(text, 300),
        "confirm": _plain(button, 30),
        "deny": _plain("Cancel", 30),
        "style": style,
    }


def approval_message(escalation: Escalation, *, link: str, buttons: bool) -> dict[str, Any]:
    """The escalation.created message: facts, then Approve / Reject / Review in console."""
    what, where = _what_where(escalation)
    expires = int(escalation.expires_at.timestamp())
    fallback = escalation.expires_at.isoformat()
    lines = [
        f"*Approval needed:* `{escape(what)}` on *{escape(where)}*",
        f"Expires <!date^{expires}^{{date_short_pretty}} {{time}}|{fallback}>"
        + (
            f" · {escalation.approvals_required} approvals needed"
            if escalation.approvals_required > 1
            else ""
        ),
    ]
    if escalation.hook_key:
        lines.append(f"Hook `{escape(escalation.hook_key)}`")
    if escalation.verdict_reason:
        lines.append(f"Why: {escape(escalation.verdict_reason)}")
    elements: list[dict[str, Any]] = []
    if buttons:
        value = str(escalation.pk)
        elements += [
            {
                "type": "button",
                "action_id": APPROVE,
                "style": "primary",
                "text": _plain("Approve", 75),
                "value": value,
                "confirm": _confirm(
                    "Approve?", f"Approve {what} on {where}.", "Approve", "primary"
                ),
            },
            {
                "type": "button",
                "action_id": REJECT,
                "style": "danger",
                "text": _plain("Reject", 75),
                "value": value,
                "confirm": _confirm(
                    "Reject?",
                    f"Reject {what} on {where}. The reason recorded is "
                    "“Rejected from Slack by <you>”; to give another, reject in the console.",
                    "Reject",
                    "danger",
                ),
            },
        ]
    elements.append(
        {"type": "button", "action_id": OPEN, "text": _plain("Review in console", 75), "url": link}
    )
    return {
        "text": f"Approval needed: {what} on {where} (expires {fallback}). {link}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:3000]}},
            {"type": "actions", "block_id": f"escalation:{escalation.pk}", "elements": elements},
        ],
    }


def decided_label(escalation: Escalation) -> str:
    """'approved by alice', 'expired', 'cancelled by bob'."""
    status = str(escalation.status)
    if escalation.status == EscalationStatus.PENDING:
        return "expired"  # pending past its expiry: the sweep has not run yet
    who = f" by {escalation.decided_by_label}" if escalation.decided_by_label else ""
    return status + who


def decided_message(escalation: Escalation) -> dict[str, Any]:
    """Replaces the clicked message once the click decided: the buttons go away."""
    what, where = _what_where(escalation)
    mark = "✅" if escalation.status == EscalationStatus.APPROVED else "⛔"
    text = f"{mark} `{escape(what)}` on *{escape(where)}*: {escape(decided_label(escalation))}"
    if escalation.decision_reason and escalation.status == EscalationStatus.REJECTED:
        text += f"\n_{escape(escalation.decision_reason[:500])}_"
    return {
        "replace_original": True,
        "text": f"{what} on {where}: {decided_label(escalation)}",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}],
    }


def ephemeral(text: str) -> dict[str, Any]:
    """Shown only to the person who clicked; the message stays as it is."""
    return {"response_type": "ephemeral", "replace_original": False, "text": text}
