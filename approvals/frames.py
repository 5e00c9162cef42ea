"""Server-rendered HTML frames for the htmx ws extension (each element swapped out of band).

- re-sync: the pending list as the inbox shows it (`#pending-rows` innerHTML: the first
  `CONSOLE_INBOX_ROWS` in the page's order), then the nav counter (the page keeps what a
  reviewer was typing or had open in rows that are still there). Sent on connect, and when
  the page asks for it: a capped page whose rows were decided asks to be refilled;
- created: the new row `afterbegin` into `#pending-rows`, marked as just arrived (the page
  sorts it into place, highlights it and may raise a browser notification);
- updated: the row replaced (a vote that did not decide);
- decided: for whoever decided, the row deleted; for everyone else the row replaced by one
  that says what happened ("Approved by alice"), which the page removes a few seconds later.
Rows are rendered per reviewer: scope, and whether this reviewer already voted.
The counter carries the expiry times of the soonest open rows, so a page stops counting a
row the moment it expires, before the sweep marks it.

The counter and the table parts travel as separate messages: the extension parses each
message as one fragment, and table elements after an inline element would be dropped by
the HTML parser.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from approvals.models import Escalation
from approvals.selectors import (
    PendingOrder,
    escalations_visible_to,
    inbox_page,
    pending_counter,
    pending_row,
)

ROW_TEMPLATE = "approvals/inbox.html#row"


def counter(user: Any) -> str:
    return render_to_string(
        "approvals/frames.html#counter", {"counter": pending_counter(user), "oob": True}
    ).strip()


def row_context(user: Any) -> dict[str, Any]:
    return {"user": user, "now": timezone.now(), "csrf_token": ""}


def resync(user: Any, view: str, order: str = PendingOrder.EXPIRES) -> list[str]:
    """The inbox's rows (the first `CONSOLE_INBOX_ROWS` in the page's order) first, then the
    counter: the page calls itself live once the first frame after connecting is on it."""
    parts: list[str] = []
    if view == "inbox":
        page = inbox_page(user, order=order)
        parts.append(
            render_to_string(
                "approvals/frames.html#resync", {**row_context(user), "escalations": page.rows}
            ).strip()
        )
    return [*parts, counter(user)]


def change(user: Any, view: str, escalation_id: str, kind: str) -> list[str]:
    """This reviewer's frames for one change: the row part first (what they act on), then
    the counter. Nothing for an escalation outside their scope."""
    inbox = view == "inbox"
    escalation = pending_row(user, escalation_id) if inbox and kind != "decided" else None
    closed: Escalation | None = None
    if escalation is None:
        visible = escalations_visible_to(user).select_related("agent")
        closed = visible.filter(pk=escalation_id).first()
        if closed is None:
            return []
    parts: list[str] = []
    if inbox:
        context = {**row_context(user), "escalation": escalation, "id": escalation_id}
        if closed is not None and kind == "decided" and closed.decided_by_id != user.pk:
            context["escalation"] = closed
            parts.append(render_to_string("approvals/frames.html#departed", context))
        elif escalation is None:
            parts.append(render_to_string("approvals/frames.html#removed", context))
        elif kind == "created":
            parts.append(render_to_string("approvals/frames.html#created", context))
        else:
            parts.append(render_to_string("approvals/frames.html#updated", context))
    parts.append(counter(user))
    return [part.strip() for part in parts]
