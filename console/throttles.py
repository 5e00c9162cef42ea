"""Rate limits on the agent endpoints: per agent token, answered with 429 and Retry-After."""

from __future__ import annotations

import logging
from typing import Any

from rest_framework.throttling import SimpleRateThrottle

from console.actors import is_agent

logger = logging.getLogger(__name__)


class AgentTokenRateThrottle(SimpleRateThrottle):
    """Bounds what one agent token may send; people's requests are not counted here."""

    scope = "agent"

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
