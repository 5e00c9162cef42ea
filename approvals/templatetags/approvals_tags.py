"""Template filters of the reviewer inbox."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone

from approvals.models import Escalation, EscalationStatus
from approvals.presenters import Transcript, transcript_view
from approvals.selectors import effective_status

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Arguments as readable JSON (escaped by the template, never marked safe)."""
    if value is None:
        return ""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def remaining(expires_at: datetime | None) -> str:
    """The countdown's first frame, before the script takes over."""
    if expires_at is None:
        return ""
    seconds = int((expires_at - timezone.now()).total_seconds())
    if seconds <= 0:
        return "expired"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}:{secs:02d}"


@register.filter
def decision_phrase(escalation: Escalation) -> str:
    """ "Approved by alice", as the row says before it leaves another reviewer's inbox."""
    status = effective_status(escalation)
    who = escalation.decided_by_label or "someone"
    if status == EscalationStatus.APPROVED:
        edited = " with edited arguments" if escalation.arguments_edited else ""
        return f"Approved by {who}{edited}"
    if status == EscalationStatus.REJECTED:
        return f"Rejected by {who}"
    if status == EscalationStatus.CANCELLED:
        return f"Cancelled by {who}"
    if status == EscalationStatus.EXPIRED:
        return "Expired with no decision"
    return "Pending"


@register.filter(name="effective_status")
def effective_status_filter(escalation: Escalation) -> str:
    return effective_status(escalation)


@register.filter
def as_transcript(text: str) -> Transcript:
    return transcript_view(text or "")


@register.filter
def epoch_ms(moment: datetime | None) -> str:
    return "" if moment is None else str(int(moment.timestamp() * 1000))


@register.filter
def epoch_ms_list(moments: Iterable[datetime]) -> str:
    """Space-separated epoch_ms: one filter call for the counter's up to
    COUNTER_EXPIRIES_MAX expiries (a template loop over 200 of them cost ~2 ms a render)."""
    return " ".join(epoch_ms(moment) for moment in moments)
