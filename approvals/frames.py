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

One change is pushed to every reviewer socket of a process. What does not depend on the
reviewer is read and rendered once per push (`push` names it) and shared by the sockets
that receive it: the escalation with its votes, each distinct row (a row differs only by
the reviewer's own vote), and the counter of each distinct reach. Every socket still checks
its own access first (approvals.socket_access), and sees only what its reach covers. With
ten reviewers online this is what kept a new escalation from reaching the last of them
360 ms after it was created (docs/benchmarks.md, "Many reviewers online").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from approvals.models import EscalationStatus
from approvals.selectors import (
    PendingOrder,
    ReviewerReach,
    effective_status,
    inbox_page,
    inbox_row,
    pending_counter,
)


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


# What is shared among the sockets of the last pushes: enough for one push to reach every
# socket (they take it within milliseconds of each other), small enough to stay tiny.
PUSH_MEMO_ENTRIES = 256
_push_memo: OrderedDict[Hashable, Any] = OrderedDict()
_push_memo_lock = threading.Lock()


def _per_push[T](push: str | None, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()`, once per (push, key) for the sockets of this process; every time
    without a push id."""
    if not push:
        return compute()
    memo_key = (push, key)
    with _push_memo_lock:
        if memo_key in _push_memo:
            found: T = _push_memo[memo_key]
            return found
    value = compute()
    with _push_memo_lock:
        _push_memo[memo_key] = value
        while len(_push_memo) > PUSH_MEMO_ENTRIES:
            _push_memo.popitem(last=False)
    return value


def change(
    user: Any,
    reach: ReviewerReach,
    view: str,
    escalation_id: str,
    kind: str,
    push: str | None = None,
) -> list[str]:
    """This reviewer's frames for one change: the row part first (what they act on), then
    the counter. Nothing for an escalation outside their reach. `reach`: the reviewer's, as
    their access was just checked; `push`: the id of the push, shared by every socket it
    reaches."""
    shared = _per_push(push, "row", lambda: inbox_row(escalation_id))
    if shared is None or not reach.sees(shared.escalation.agent_id):
        return []
    parts: list[str] = []
    if view == "inbox":
        departed = kind == "decided" and shared.escalation.decided_by_id != user.pk
        row = shared.for_reviewer(user, with_vote=not departed)
        still_open = effective_status(row) == EscalationStatus.PENDING
        if departed:
            template = "departed"
        elif kind == "decided" or not still_open:
            template = "removed"
        else:
            template = "created" if kind == "created" else "updated"
        context = {**row_context(user), "escalation": row, "id": escalation_id}
        parts.append(
            _per_push(
                push,
                ("frame", template, row.my_vote),  # type: ignore[attr-defined]
                lambda: render_to_string(f"approvals/frames.html#{template}", context),
            )
        )
    parts.append(_per_push(push, ("counter", reach.agent_ids), lambda: counter(user)))
    return [part.strip() for part in parts]
