"""Server-rendered HTML frames for the htmx ws extension (each element swapped out of band).

- re-sync: the whole pending list (`#pending-rows` innerHTML) and the nav counter;
- created: the new row `afterbegin` into `#pending-rows`, marked as just arrived (the page
  sorts it into place, highlights it and may raise a browser notification);
- updated: the row replaced (a vote that did not decide);
- decided: for whoever decided, the row deleted; for everyone else the row replaced by one
  that says what happened ("Approved by alice"), which the page removes a few seconds later.
Rows are rendered per reviewer: scope, and whether this reviewer already voted. A push is
read and rendered once per reviewer reach (the agents one may decide for) in this process:
the sockets of every reviewer with that reach share the reads, the counter and each variant
of the row (voted or not; decided by them or by someone else), so N open inboxes cost one
read, not N. Each socket's access is still re-checked before it gets anything.
The counter carries the expiry times of the soonest open rows, so a page stops counting a
row the moment it expires, before the sweep marks it.

The counter and the table parts travel as separate messages: the extension parses each
message as one fragment, and table elements after an inline element would be dropped by
the HTML parser.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from copy import copy
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from approvals.models import Escalation
from approvals.selectors import (
    ReviewerReach,
    escalations_in_reach,
    pending_counter,
    pending_for,
    reach_counter,
    reach_row,
    reviewer_reach,
)

ROW_TEMPLATE = "approvals/inbox.html#row"
# How many shared reads (one per push and reach) a process keeps, and for how long: a socket
# that takes longer than that to get to a push reads and renders it itself.
SHARED_PUSHES_MAX = 512
SHARED_SECONDS = 2.0


def counter(user: Any) -> str:
    return _counter_frame(pending_counter(user))


def _counter_frame(value: Any) -> str:
    return render_to_string(
        "approvals/frames.html#counter", {"counter": value, "oob": True}
    ).strip()


def row_context(user: Any) -> dict[str, Any]:
    return {"user": user, "now": timezone.now(), "csrf_token": ""}


def resync(user: Any, view: str) -> list[str]:
    parts = [counter(user)]
    if view == "inbox":
        rows = list(pending_for(user))
        parts.append(
            render_to_string(
                "approvals/frames.html#resync", {**row_context(user), "escalations": rows}
            ).strip()
        )
    return parts


@dataclass
class _Reads:
    """One push as every reviewer with one reach sees it: read once, rendered per variant."""

    row: Escalation | None  # open and in reach (inbox only)
    votes_by: dict[int, str]  # the row's votes: voter id → outcome
    closed: Escalation | None  # in reach, read when there is no open row
    counter: str
    at: float = field(default_factory=time.monotonic)
    rendered: dict[tuple[Any, ...], str] = field(default_factory=dict)


_shared: OrderedDict[tuple[Any, ...], _Reads] = OrderedDict()
_lock = threading.Lock()
stats = {"reads": 0, "renders": 0}  # what tests count: shared reads and row renders


def _read(reach: ReviewerReach, inbox: bool, escalation_id: str, kind: str) -> _Reads:
    stats["reads"] += 1
    found = reach_row(reach, escalation_id) if inbox and kind != "decided" else None
    row, votes_by = found if found is not None else (None, {})
    closed = None
    if row is None:
        closed = (
            escalations_in_reach(reach).select_related("agent").filter(pk=escalation_id).first()
        )
    counted = (
        _counter_frame(reach_counter(reach)) if (row is not None or closed is not None) else ""
    )
    return _Reads(row=row, votes_by=votes_by, closed=closed, counter=counted)


def _reads(
    reach: ReviewerReach, inbox: bool, escalation_id: str, kind: str, push: str | None
) -> _Reads:
    if push is None:
        return _read(reach, inbox, escalation_id, kind)
    key = (push, escalation_id, kind, inbox, reach.agent_ids)
    now = time.monotonic()
    with _lock:
        found = _shared.get(key)
        if found is not None and now - found.at <= SHARED_SECONDS:
            return found
    reads = _read(reach, inbox, escalation_id, kind)
    with _lock:
        _shared[key] = reads
        # Oldest first: drop what is past its time or beyond the bound.
        while _shared and (
            len(_shared) > SHARED_PUSHES_MAX
            or reads.at - next(iter(_shared.values())).at > SHARED_SECONDS
        ):
            _shared.popitem(last=False)
    return reads


def change(
    user: Any,
    view: str,
    escalation_id: str,
    kind: str,
    *,
    reach: ReviewerReach | None = None,
    push: str | None = None,
) -> list[str]:
    """This reviewer's frames for one change: the row part first (what they act on), then
    the counter. Nothing for an escalation outside their scope.

    `reach`: the reviewer's reach as the socket's re-check just read it (else read here);
    `push`: the push's id, under which reviewers with the same reach share reads and
    renders (None: nothing shared)."""
    reach = reach if reach is not None else reviewer_reach(user)
    if reach is None:
        return []
    inbox = view == "inbox"
    reads = _reads(reach, inbox, escalation_id, kind, push)
    if reads.row is None and reads.closed is None:
        return []
    parts: list[str] = []
    if inbox:
        parts.append(_row_frame(reads, user, escalation_id, kind))
    parts.append(reads.counter)
    return [part.strip() for part in parts]


def _row_frame(reads: _Reads, user: Any, escalation_id: str, kind: str) -> str:
    closed, row = reads.closed, reads.row
    escalation: Any
    if closed is not None and kind == "decided" and closed.decided_by_id != user.pk:
        variant: tuple[Any, ...] = ("departed",)
        template, escalation = "approvals/frames.html#departed", closed
    elif row is None:
        variant, template, escalation = ("removed",), "approvals/frames.html#removed", None
    else:
        my_vote = reads.votes_by.get(user.pk)
        partial = "created" if kind == "created" else "updated"
        variant, template = (partial, my_vote), f"approvals/frames.html#{partial}"
        escalation = copy(row)
        escalation.my_vote = my_vote
    with _lock:
        done = reads.rendered.get(variant)
    if done is not None:
        return done
    stats["renders"] += 1
    context = {**row_context(user), "escalation": escalation, "id": escalation_id}
    frame = render_to_string(template, context)
    with _lock:
        reads.rendered[variant] = frame
    return frame
