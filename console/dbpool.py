"""The PostgreSQL pool's check on checkout, without a round trip while the connection is well.

`ConnectionPool.check_connection` sends an empty query on every checkout: one more round
trip for every request, and for every database hop of a websocket consumer or a long-poll.
A connection the server ended (a restart, `pg_terminate_backend`, an idle timeout) has its
socket readable at once: the server's FATAL message and the close wait in the socket
buffer. So a pooled connection whose socket has nothing to read, used within the last
`QUIET_SECONDS`, is handed out as it is; anything else (readable, broken, idle longer) gets
the full check, which discards a dead connection and lets the pool open another one.
"""

from __future__ import annotations

import select
import time
from typing import Any

from psycopg_pool import ConnectionPool

# A connection idle longer than this gets the round-trip check (a peer that vanished
# without closing its socket cannot be seen locally).
QUIET_SECONDS = 30.0
_CHECKED_AT = "_console_checked_at"


def _socket_readable(conn: Any) -> bool:
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def check_connection(conn: Any) -> None:
    """Raise if `conn` is not usable (the pool then discards it); see the module docstring."""
    now = time.monotonic()
    last = getattr(conn, _CHECKED_AT, None)
    if (
        not conn.closed
        and not conn.broken
        and last is not None
        and now - last < QUIET_SECONDS
        and not _socket_readable(conn)
    ):
        setattr(conn, _CHECKED_AT, now)
        return
    ConnectionPool.check_connection(conn)
    setattr(conn, _CHECKED_AT, now)
