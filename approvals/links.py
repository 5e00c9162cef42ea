"""Signed decision links: `SITE_URL/approvals/link/<token>/`, the fallback way to decide from
a chat tool or an e-mail that has no buttons of its own.

The token names one escalation, signed with the console's SECRET_KEY (salted, timestamped),
so nobody can mint a link to another escalation. It grants nothing by itself: the page asks
for a login and checks the reviewer's role and scope exactly as the inbox does (a webhook
goes to a channel, not a person). It is one-time in effect: once the escalation is decided
the page shows the decision, never a second form.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.core import signing
from django.urls import reverse

from agents.validation import EXPIRES_MAX
from approvals.models import Escalation

SALT = "approvals.decision-link"


def link_max_age() -> timedelta:
    """Long enough for the longest-lived escalation; its expiry closes the decision sooner."""
    longest = max(EXPIRES_MAX, settings.CONSOLE_DEFAULT_ESCALATION_SECONDS)
    return timedelta(seconds=longest) + timedelta(days=1)


class _IssuedAtSigner(signing.TimestampSigner):
    """Dated by the escalation's creation, so every message about one escalation (a webhook
    retried, a decision announced) carries the same link, and its age counts from then."""

    def __init__(self, issued_at: datetime | None = None) -> None:
        super().__init__(salt=SALT)
        self.issued_at = issued_at

    def timestamp(self) -> str:
        if self.issued_at is None:
            return super().timestamp()
        return signing.b62_encode(int(self.issued_at.timestamp()))


def decision_link_token(escalation: Escalation) -> str:
    return _IssuedAtSigner(escalation.created_at).sign_object(str(escalation.pk))


def decision_link_url(escalation: Escalation) -> str:
    path = reverse("approvals:link", kwargs={"token": decision_link_token(escalation)})
    return settings.SITE_URL.rstrip("/") + path


def escalation_id_from_token(token: str) -> UUID | None:
    """The escalation a link names, or None when it is forged, altered or too old."""
    try:
        return UUID(str(_IssuedAtSigner().unsign_object(token, max_age=link_max_age())))
    except (signing.BadSignature, ValueError):
        return None
