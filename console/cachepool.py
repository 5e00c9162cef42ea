"""One Redis connection pool per process for Django's cache and the console's own keys.

Django makes a cache object per thread and per async request context, and its Redis
client builds a connection pool per object: on daphne every agent request opened a new
Redis connection for its rate-limit count (`redis-cli info stats`: one connection received
per request). This pool class hands every cache object of the process the same pool per
Redis URL; redis-py's pool is thread-safe and starts over in a forked child by itself.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any, ClassVar, Self

import redis


class SharedConnectionPool(redis.ConnectionPool):
    _shared: ClassVar[dict[str, Any]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Self:
        with cls._shared_lock:
            pool = cls._shared.get(url)
            if pool is None:
                pool = cls._shared[url] = super().from_url(url, **kwargs)
            return pool


def shared_redis() -> redis.Redis:
    """The process's client on its pool for REDIS_URL (the console's own keys: the rate
    limit's counts, the seal queue's marks); only where REDIS_URL is set."""
    from django.conf import settings

    return _client(settings.REDIS_URL)


@cache
def _client(url: str) -> redis.Redis:
    # One client per URL, not one per call: a client is thread-safe over its pool, and
    # building one costs ~90 µs (redis-py reads its own package metadata every time).
    return redis.Redis(connection_pool=SharedConnectionPool.from_url(url))
