"""`/ws/approvals/`: reviewers' live inbox and nav counter (htmx ws extension frames).

Holds no business logic: on connect it sends a full re-sync; on each wake-up it asks
approvals.frames for this reviewer's re-rendered HTML and forwards it.
`?view=inbox` gets rows and the counter; anything else (`?view=nav`) the counter only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from approvals import frames
from approvals.live import REVIEWERS_GROUP, remember_server_loop
from console.roles import is_reviewer


class ApprovalsConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    user: Any = None
    view: str = "nav"
    joined: bool = False

    async def connect(self) -> None:
        remember_server_loop()
        user = self.scope.get("user")
        if user is None or not await database_sync_to_async(is_reviewer)(user):
            await self.close(code=4403)
            return
        self.user = user
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = "inbox" if query.get("view") == ["inbox"] else "nav"
        await self.channel_layer.group_add(REVIEWERS_GROUP, self.channel_name)
        self.joined = True
        await self.accept()
        for frame in await database_sync_to_async(frames.resync)(user, self.view):
            await self.send(text_data=frame)

    async def disconnect(self, code: int) -> None:
        if self.joined:
            await self.channel_layer.group_discard(REVIEWERS_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Decisions go through HTTP (CSRF, the same service as the API); nothing to do here."""

    async def escalation_changed(self, event: dict[str, Any]) -> None:
        for frame in await database_sync_to_async(frames.change)(
            self.user, self.view, event["id"], event["kind"]
        ):
            await self.send(text_data=frame)
