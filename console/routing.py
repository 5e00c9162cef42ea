"""Websocket routes of every app, gathered in one list for the ASGI router (wiring: it
imports the apps' routes)."""

from __future__ import annotations

from typing import Any

from approvals.routing import websocket_urlpatterns as approvals_ws

websocket_urlpatterns: list[Any] = [*approvals_ws]
