"""`GET /api/v1/escalations/{id}?wait=N`: the agent's long-poll, an async view.

It subscribes to the escalation's channel-layer group and re-reads the row from the database
when woken. PostgreSQL is the truth: a slow re-check (every SAFETY_RECHECK_SECONDS) covers a
lost push or an unusable Redis, and an escalation past expires_at reads as expired, so the
answer always arrives within one wait period. The token is checked again after the wait:
one revoked while its request waited gets a 401, not the decision.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.db.models import Exists, IntegerField, QuerySet, UUIDField
from django.http import Http404, HttpRequest, JsonResponse
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from agents.models import AgentToken
from approvals.live import escalation_group, remember_server_loop
from approvals.models import Escalation
from approvals.selectors import effective_status, escalation_by_id, get_escalation_for_agent
from approvals.wire import status_answer
from console.actors import AgentPrincipal, is_agent
from console.auth import BearerTokenAuthentication
from console.errors import Forbidden, InvalidInput, MethodNotAllowed, NotAuthenticated, NotFound
from console.prepared import PreparedQuery

logger = logging.getLogger(__name__)

SAFETY_RECHECK_SECONDS = 5.0
SUBSCRIBE_TIMEOUT_SECONDS = 2.0


def _released[**P, R](fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """Run a read, then hand the database session back (to the pool, or closed): a waiting
    long-poll must hold no connection, or a few hundred waiting agents would exhaust them."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            if not connection.in_atomic_block:
                connection.close()

    return sync_to_async(run)


def _principal(request: HttpRequest) -> AgentPrincipal:
    header = request.headers.get("Authorization", "")
    parts = header.split()
    if len(parts) != 2 or parts[0] != "Bearer":
        raise NotAuthenticated("Send 'Authorization: Bearer <agent token>'.")
    try:
        principal, _token = BearerTokenAuthentication.authenticate_token(parts[1])
    except AuthenticationFailed as exc:
        raise NotAuthenticated(str(exc.detail)) from None
    if not is_agent(principal):
        raise Forbidden("This endpoint takes an agent token.")
    return principal


def _wait_seconds(raw: str | None) -> float:
    if raw in (None, ""):
        return 0.0
    try:
        wait = float(raw)
    except ValueError:
        wait = -1.0
    if not 0 <= wait < float("inf"):
        raise InvalidInput("Bad wait.", fields={"/wait": ["Seconds, a number >= 0."]})
    return min(wait, float(settings.CONSOLE_LONGPOLL_MAX_SECONDS))


def _with_token(pk: UUID, token_pk: int) -> QuerySet[Escalation]:
    live = AgentToken.objects.filter(pk=token_pk, revoked_at__isnull=True)
    rows = Escalation.objects.select_related("agent").annotate(token_active=Exists(live))
    return rows.filter(pk=pk)[:1]


_row_and_token = PreparedQuery(
    Escalation,
    _with_token,
    pk=UUIDField(),
    token_pk=IntegerField(),
)


def _reread(escalation: Escalation, token_pk: int | None = None) -> Escalation:
    """The row as it stands; with `token_pk`, in the same query, whether that agent token is
    still unrevoked (`token_active` on the row): one round trip after a wake-up."""
    if token_pk is None:
        row = escalation_by_id(escalation.pk)
    else:
        row = _row_and_token.first(pk=escalation.pk, token_pk=token_pk)
    if row is None:
        raise Escalation.DoesNotExist(f"escalation {escalation.pk} is gone")
    return row


def _pending(escalation: Escalation) -> bool:
    return effective_status(escalation) == "pending"


async def _subscribe(layer: Any, group: str) -> str | None:
    try:
        channel: str = await layer.new_channel()
        async with asyncio.timeout(SUBSCRIBE_TIMEOUT_SECONDS):
            await layer.group_add(group, channel)
        return channel
    except Exception as exc:  # no wake-ups: fall back to the slow re-check
        logger.warning("approvals: long-poll subscribe failed (%s: %s)", type(exc).__name__, exc)
        return None


class _Wakeups:
    """The long-poll's subscription: one pending `receive` on its channel for the whole wait.

    A receive cancelled by a timeout would, on the pub/sub layer, drop the channel's
    subscription until the next receive, and a push in between would be lost; so a timeout
    only stops waiting, and the same receive goes on into the next wait."""

    def __init__(self, layer: Any, channel: str | None) -> None:
        self.layer, self.channel = layer, channel
        self._receiving: asyncio.Task[Any] | None = None

    async def wait(self, seconds: float) -> None:
        """Sleep up to `seconds`; return early on a push. Without a channel (or once the
        layer failed), only sleep: the caller's re-read is the fallback."""
        if self.channel is None:
            await asyncio.sleep(seconds)
            return
        if self._receiving is None:
            self._receiving = asyncio.ensure_future(self.layer.receive(self.channel))
        done, _ = await asyncio.wait({self._receiving}, timeout=seconds)
        if not done:
            return
        receiving, self._receiving = self._receiving, None
        if receiving.exception() is not None:
            exc = receiving.exception()
            logger.warning("approvals: long-poll wake-up lost (%s: %s)", type(exc).__name__, exc)
            self.channel = None

    def close(self) -> None:
        """Stop receiving; the cancelled receive cleans the channel up in the background."""
        if self._receiving is not None:
            self._receiving.cancel()  # the layer's own clean-up: it unsubscribes the channel
            _keep(self._receiving)
            self._receiving = None


async def _discard(layer: Any, group: str, channel: str) -> None:
    try:
        async with asyncio.timeout(SUBSCRIBE_TIMEOUT_SECONDS):
            await layer.group_discard(group, channel)
    except Exception as exc:
        logger.info("approvals: long-poll unsubscribe failed (%s)", type(exc).__name__)


_background: set[asyncio.Task[Any]] = set()


def _keep(task: asyncio.Task[Any]) -> None:
    """Hold a reference to a clean-up task until it ends (the loop holds only weak ones)."""
    _background.add(task)
    task.add_done_callback(_background.discard)


def _unsubscribe(layer: Any, group: str, channel: str | None) -> None:
    """Leave the group in the background: the answer does not wait for it (a membership
    left behind by a failure holds a name, no subscription: a later push finds no reader)."""
    if channel is None:
        return
    _keep(asyncio.get_running_loop().create_task(_discard(layer, group, channel)))


async def escalation_status(request: HttpRequest, pk: str) -> JsonResponse:
    if request.method != "GET":
        raise MethodNotAllowed(f"Method {request.method} not allowed.")
    remember_server_loop()

    def authenticated_read() -> tuple[AgentPrincipal, float, Escalation]:
        principal = _principal(request)
        wait = _wait_seconds(request.GET.get("wait"))
        try:
            return principal, wait, get_escalation_for_agent(principal.agent, pk)
        except Http404:
            raise NotFound("No such escalation.") from None

    principal, wait, escalation = await _released(authenticated_read)()  # one thread hop
    escalation = await escalation_wait(escalation, wait, token_pk=principal.token.pk)
    # The token as the last re-read saw it (no wait: as the request's authentication saw it).
    if not getattr(escalation, "token_active", True):
        raise NotAuthenticated("The token was revoked while this request waited.")
    return JsonResponse(status_answer(escalation))


async def escalation_wait(
    escalation: Escalation, seconds: float, *, token_pk: int | None = None
) -> Escalation:
    """The escalation once it leaves `pending` (a decision, or its expiry), or as it stands
    after `seconds`. Holds no database connection while it waits. With `token_pk`, each
    re-read also says whether that agent token is still unrevoked (`token_active`). Also
    used by the console's runtime adapters, which hold a Claude Code (…) hook request open
    this way."""
    deadline = time.monotonic() + seconds
    if not _pending(escalation) or seconds <= 0:
        return escalation
    layer, group = get_channel_layer(), escalation_group(escalation.pk)
    channel = await _subscribe(layer, group) if layer is not None else None
    wakeups = _Wakeups(layer, channel)
    try:
        # Re-read after subscribing: a decision committed in between is not missed.
        escalation = await _released(_reread)(escalation, token_pk)
        while _pending(escalation) and (remaining := deadline - time.monotonic()) > 0:
            until_expiry = (escalation.expires_at - timezone.now()).total_seconds()
            timeout = max(0.01, min(remaining, SAFETY_RECHECK_SECONDS, until_expiry + 0.01))
            await wakeups.wait(timeout)
            escalation = await _released(_reread)(escalation, token_pk)
    finally:
        wakeups.close()
        _unsubscribe(layer, group, channel)
    return escalation


# Shared with the other async agent endpoints (the runtimes app).
released = _released
agent_principal = _principal
