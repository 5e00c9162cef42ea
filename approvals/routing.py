"""Websocket routes of the approvals app (gathered by console/routing.py)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from approvals.consumers import ApprovalsConsumer

websocket_urlpatterns: list[Any] = [path("ws/approvals/", ApprovalsConsumer.as_asgi())]
