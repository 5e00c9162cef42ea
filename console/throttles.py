"""Rate limits on the agent endpoints: per agent token, answered with 429 and Retry-After."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import caches
from django.core.signals import setting_changed
from django.dispatch import receiver
from rest_framework.throttling import SimpleRateThrottle

from console.actors import is_agent

logger = logging.getLogger(__name__)

_shared: dict[str, Any] = {}


def process_cache() -> Any:
    """The default cache as one object for the whole process.

    Django hands out a cache object per thread (per async context), and under ASGI every
    request runs in a thread of its own: with Redis each agent request made a new connection
    pool and paid a connect and a handshake before it was counted. redis-py's pool and the
    local-memory cache are thread-safe, so the limiter shares one."""
    cache = _shared.get("default")
    if cache is None:
        cache = _shared["default"] = caches.create_connection("default")
    return cache


@receiver(setting_changed)
def _caches_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "CACHES":
        _shared.clear()


class AgentTokenRateThrottle(SimpleRateThrottle):
    """Bounds what one agent token may send; people's requests are not counted here."""

    scope = "agent"

    def __init__(self) -> None:
        super().__init__()
        self.cache = process_cache()

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        user = request.user
        if not is_agent(user):
            return None
        return self.cache_format % {"scope": self.scope, "ident": user.token.prefix}

    def allow_request(self, request: Any, view: Any) -> bool:
        # The limiter is a guard against floods, not a control: when its cache (Redis) is down,
        # approvals and record ingest must keep working from PostgreSQL, so let the request in.
        try:
            return super().allow_request(request, view)
        except Exception:  # noqa: BLE001 - any cache backend failure
            logger.warning("rate-limit cache unavailable; request not counted", exc_info=True)
            return True
