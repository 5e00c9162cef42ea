"""Who may keep a reviewer socket open: re-checked on every push, not only at the handshake.

A push carries escalations with their arguments, so before each one the socket's session must
still authenticate its user (not logged out, flushed, expired or password-changed; the user
active) and that user must still be a reviewer whose reach (the agents they may decide for)
has not shrunk. Otherwise the consumer closes the socket with one of the codes below; the
inbox page clears its rows and reloads, which shows the login page or the narrower inbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from approvals.selectors import ReviewerReach, reviewer_reach
from console.sessions import session_user

# 4000-4999 are the application's own close codes (RFC 6455 §7.4.2).
CLOSE_SESSION_ENDED = 4401  # logged out, session flushed or expired, user deactivated
CLOSE_FORBIDDEN = 4403  # not (or no longer) a reviewer, or fewer agents in reach


class AccessEnded(Exception):
    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


@dataclass(frozen=True)
class SocketAccess:
    user: Any
    reach: ReviewerReach


def socket_access(session_key: str | None, *, before: SocketAccess | None = None) -> SocketAccess:
    """The socket's access now; AccessEnded when it must close. `before`: what it had."""
    user = session_user(session_key)
    if user is None:
        raise AccessEnded(CLOSE_SESSION_ENDED, "the session no longer authenticates a user")
    if before is not None and user.pk != before.user.pk:
        raise AccessEnded(CLOSE_SESSION_ENDED, "the session now belongs to another user")
    reach = reviewer_reach(user)
    if reach is None:
        raise AccessEnded(CLOSE_FORBIDDEN, "the user is not a reviewer")
    if before is not None and not reach.covers(before.reach):
        raise AccessEnded(CLOSE_FORBIDDEN, "the reviewer may decide for fewer agents")
    return SocketAccess(user=user, reach=reach)
