"""Rate limits on the agent endpoints: per agent token, answered with 429 and Retry-After.

A sliding-window counter: a count per token and window (the rate's period) and the
estimate `previous window's count × the part of it still inside the sliding period + this
window's count`. One Redis round trip per request (INCR, EXPIRE and a GET in one pipeline)
and a constant amount of work whatever the rate; DRF's `SimpleRateThrottle`, which this
replaces, read and wrote back the list of every request's time in the period (6,000
timestamps at the default rate, pickled twice per request). Every request counts,
refused ones too: a client that keeps sending past its rate stays refused until it waits.
Without Redis (the embedded default) the counts live in Django's cache.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from console.actors import is_agent
from console.cachepool import shared_redis

logger = logging.getLogger(__name__)


def _window_counts(key: str, duration: int, window: int) -> tuple[int, int]:
    """(this window's count with this request, the previous window's count)."""
    current, previous = f"{key}:{window}", f"{key}:{window - 1}"
    if settings.REDIS_URL:
        pipe = shared_redis().pipeline(transaction=False)
        pipe.incr(current)
        pipe.expire(current, 2 * duration)
        pipe.get(previous)
        count, _, before = pipe.execute()
        return int(count), int(before or 0)
    cache.add(current, 0, 2 * duration)
    return int(cache.incr(current)), int(cache.get(previous) or 0)


class AgentTokenRateThrottle(SimpleRateThrottle):
    """Bounds what one agent token may send; people's requests are not counted here."""

    scope = "agent"
    cache_format = "console:throttle:%(scope)s:%(ident)s"
    # Set by SimpleRateThrottle.__init__ from the rate, and by allow_request.
    num_requests: int
    duration: int
    count: int = 0
    before: int = 0
    into: float = 0.0

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        user = request.user
        if not is_agent(user):
            return None
        return self.cache_format % {"scope": self.scope, "ident": user.token.prefix}

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        now = time.time()
        window, into = divmod(now, self.duration)
        # The limiter is a guard against floods, not a control: when its cache (Redis) is down,
        # approvals and record ingest must keep working from PostgreSQL, so let the request in.
        try:
            self.count, self.before = _window_counts(self.key, self.duration, int(window))
        except (redis.RedisError, OSError, ValueError):
            logger.warning("rate-limit cache unavailable; request not counted", exc_info=True)
            return True
        self.into = into / self.duration
        return self.before * (1 - self.into) + self.count <= self.num_requests

    def wait(self) -> float:
        """Seconds until one more request would be let in."""
        limit, duration = self.num_requests, self.duration
        if self.count >= limit:
            # Not before the next window, where this window's count fades as it passes.
            fade = 1 - (limit - 1) / self.count
            seconds = (1 - self.into + fade) * duration
        else:
            fade = 1 - (limit - self.count - 1) / self.before
            seconds = (fade - self.into) * duration
        return float(max(1, math.ceil(seconds)))
