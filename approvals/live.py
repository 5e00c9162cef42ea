"""Wake-ups after commit: reviewers' sockets and waiting long-polls, over the channel layer.

Redis carries wake-ups only (at most once); PostgreSQL holds every fact. A lost push is
repaired by the long-poll's slow re-check and by the consumer's re-sync on reconnect, so
sending never raises into the caller: a decision that committed stays committed. For the
same reason a request does not wait for its push: from a thread serving the event loop (a
sync view) the sends are handed to that loop and the response goes out at once (a reviewer's
decision answered 7–17 ms sooner at p50, docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any
from uuid import UUID, uuid4

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from console import embedded

logger = logging.getLogger(__name__)

REVIEWERS_GROUP = "approvals.reviewers"
SEND_TIMEOUT_SECONDS = 2.0

_server: dict[str, Any] = {"loop": None, "thread": None}


def escalation_group(pk: UUID | str) -> str:
    return f"approvals.escalation.{UUID(str(pk)).hex}"


def user_group(user_id: int) -> str:
    """Every reviewer socket of one person (to re-check their access at once)."""
    return f"approvals.user.{int(user_id)}"


def remember_server_loop() -> None:
    """Called from async code that serves requests (consumer, long-poll).

    The in-memory layer (embedded default) is bound to the server's event loop; a push from a
    thread that is not a child of that loop (the embedded beat) must hop onto it.
    """
    _server["loop"] = asyncio.get_running_loop()
    _server["thread"] = threading.get_ident()


async def _send(layer: Any, messages: list[tuple[str, dict[str, Any]]]) -> None:
    for group, message in messages:
        try:
            async with asyncio.timeout(SEND_TIMEOUT_SECONDS):
                await layer.group_send(group, message)
        except Exception as exc:  # a lost wake-up is repaired by re-checks; go on with the rest
            logger.warning("approvals: push to %s failed (%s: %s)", group, type(exc).__name__, exc)


_sending: set[asyncio.Task[None]] = set()


def _calling_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop whose `sync_to_async` call runs this thread's code (a request
    to a sync view, a consumer's database hop); None elsewhere (a Celery worker, a command,
    a thread of its own)."""
    local = SyncToAsync.threadlocal
    loop: asyncio.AbstractEventLoop | None = getattr(local, "main_event_loop", None)
    if loop is None or getattr(local, "main_event_loop_pid", None) != os.getpid():
        return None
    return loop if loop.is_running() else None


def _spawn(layer: Any, messages: list[tuple[str, dict[str, Any]]]) -> None:
    task = asyncio.get_running_loop().create_task(_send(layer, messages))
    _sending.add(task)
    task.add_done_callback(_sending.discard)


def push(*messages: tuple[str, dict[str, Any]]) -> None:
    """group_send each (group, message) in order, in one hop onto the event loop; from a
    thread serving that loop without waiting for the sends."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        serving = _calling_loop()
        if serving is not None:
            serving.call_soon_threadsafe(_spawn, layer, list(messages))
            return
        loop = _server["loop"]
        if (
            embedded.channel_layer_in_process(layer)
            and loop is not None
            and loop.is_running()
            and _server["thread"] != threading.get_ident()
        ):
            future = asyncio.run_coroutine_threadsafe(_send(layer, list(messages)), loop)
            future.result(timeout=SEND_TIMEOUT_SECONDS * len(messages) + 1)
        else:
            async_to_sync(_send)(layer, list(messages))
    except Exception as exc:
        logger.warning("approvals: push failed (%s: %s)", type(exc).__name__, exc)


def escalation_changed(escalation_id: UUID | str, kind: str) -> None:
    """kind: created | updated (a non-final vote) | decided (approved, rejected, expired, …).
    `push` names this push: the sockets it reaches share what they read and render for it
    (approvals.frames)."""
    changed = (
        REVIEWERS_GROUP,
        {"type": "escalation.changed", "id": str(escalation_id), "kind": kind, "push": uuid4().hex},
    )
    if kind != "decided":
        push(changed)
        return
    # The agent waiting on its long-poll first: reviewers' screens can take the next hop.
    decided = {"type": "escalation.decided", "id": str(escalation_id)}
    push((escalation_group(escalation_id), decided), changed)


def on_commit_changed(escalation_id: UUID | str, kind: str) -> None:
    transaction.on_commit(lambda: escalation_changed(escalation_id, kind))


def access_changed(user_id: int) -> None:
    """A person's account, roles or reviewer scope changed: their open sockets re-check their
    access now rather than at the next escalation (and close if it ended or shrank)."""
    push((user_group(user_id), {"type": "access.changed"}))


def on_commit_access_changed(user_id: int) -> None:
    transaction.on_commit(lambda: access_changed(user_id))
