"""`/ws/approvals/`: reviewers' live inbox and nav counter (htmx ws extension frames).

Holds no business logic: on connect it sends a full re-sync; on each wake-up it asks
approvals.frames for this reviewer's re-rendered HTML and forwards it.
`?view=inbox` gets rows (the first `CONSOLE_INBOX_ROWS` in `&sort=`'s order) and the counter;
anything else (`?view=nav`) the counter only. The only message a page sends is
`{"resync": true}`: an inbox that shows fewer rows than it may while more are open (rows were
decided) asks for the re-sync that refills it.
Before the re-sync and before every push the socket's access is checked again
(approvals.socket_access): a logout, a deactivation, a lost role or a narrower reviewer
scope closes the socket instead of sending more escalations. A change to the person's account
(approvals.live.access_changed) triggers the same check at once, so a deactivated reviewer's
socket closes without waiting for the next escalation.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from approvals import frames
from approvals.live import REVIEWERS_GROUP, remember_server_loop, user_group
from approvals.selectors import PendingOrder, pending_order
from approvals.socket_access import CLOSE_FORBIDDEN, AccessEnded, SocketAccess, socket_access

RESYNC_INTERVAL_SECONDS = 1.0


class ApprovalsConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    access: SocketAccess | None = None
    session_key: str | None = None
    view: str = "nav"
    order: str = PendingOrder.EXPIRES
    joined: list[str] | None = None
    refill: asyncio.Task[None] | None = None
    resynced_at: float = 0.0

    async def connect(self) -> None:
        remember_server_loop()
        session = self.scope.get("session")
        self.session_key = getattr(session, "session_key", None)
        try:
            self.access = await database_sync_to_async(socket_access)(self.session_key)
        except AccessEnded:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = "inbox" if query.get("view") == ["inbox"] else "nav"
        self.order = pending_order((query.get("sort") or [""])[0])
        self.joined = [REVIEWERS_GROUP, user_group(self.access.user.pk)]
        for group in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        user = self.access.user
        for frame in await database_sync_to_async(frames.resync)(user, self.view, self.order):
            await self.send(text_data=frame)
        self.resynced_at = asyncio.get_running_loop().time()

    async def disconnect(self, code: int) -> None:
        groups, self.joined = self.joined or [], None
        for group in groups:
            await self.channel_layer.group_discard(group, self.channel_name)
        if self.refill is not None and self.refill is not asyncio.current_task():
            self.refill.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """A re-sync request from an inbox page; anything else is ignored (decisions go
        through HTTP: CSRF, the same service as the API). At most one re-sync per
        RESYNC_INTERVAL_SECONDS per socket: a request inside it is served at its end, and
        requests while one is waiting are answered by that one (a page flooding requests
        costs one re-sync a second, not one per message)."""
        if self.view != "inbox" or self.refill is not None or not _asks_resync(text_data):
            return
        self.refill = asyncio.create_task(self._refill())

    async def _refill(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.sleep(self.resynced_at + RESYNC_INTERVAL_SECONDS - loop.time())
            _, rendered = await self._recheck(
                lambda access: frames.resync(access.user, self.view, self.order)
            )
            for frame in rendered or []:
                await self.send(text_data=frame)
            self.resynced_at = loop.time()
        finally:
            self.refill = None

    async def _recheck(self, then: Any = None) -> tuple[SocketAccess | None, Any]:
        """The socket's access now and `then(access)` computed right after, in one database
        hop; (None, None) and the socket closed if the access ended or shrank."""
        before = self.access
        if before is None:  # closed already: wake-ups queued before the close
            return None, None

        def check() -> tuple[SocketAccess, Any]:
            access = socket_access(self.session_key, before=before)
            return access, then(access) if then is not None else None

        try:
            self.access, result = await database_sync_to_async(check)()
        except AccessEnded as ended:
            self.access = None
            await self.disconnect(ended.code)
            await self.close(code=ended.code)
            return None, None
        return self.access, result

    async def access_changed(self, event: dict[str, Any]) -> None:
        await self._recheck()

    async def escalation_changed(self, event: dict[str, Any]) -> None:
        def render(access: SocketAccess) -> list[str]:
            return frames.change(
                access.user, access.reach, self.view, event["id"], event["kind"], event.get("push")
            )

        access, rendered = await self._recheck(render)
        if access is None:
            return
        for frame in rendered:
            await self.send(text_data=frame)


def _asks_resync(text: str | None) -> bool:
    if not text or len(text) > 64:
        return False
    try:
        message = json.loads(text)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("resync") is True
