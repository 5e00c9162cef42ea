"""Websocket routes of every app, gathered in one list for the ASGI router."""

from __future__ import annotations

from typing import Any

websocket_urlpatterns: list[Any] = []

try:  # approvals owns /ws/approvals/
    from approvals.routing import websocket_urlpatterns as approvals_ws
except ImportError:  # pragma: no cover - app without websocket routes yet
    approvals_ws = []
websocket_urlpatterns += approvals_ws
