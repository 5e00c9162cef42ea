"""Who may keep a reviewer socket open: re-checked on every push, not only at the handshake.

A push carries escalations with their arguments, so before each one the socket's session must
still authenticate its user (not logged out, flushed, expired or password-changed; the user
active) and that user must still be a reviewer whose reach (the agents they may decide for)
has not shrunk. Otherwise the consumer closes the socket with one of the codes below; the
inbox page clears its rows and reloads, which shows the login page or the narrower inbox.

The re-check before a push is one query (`_unchanged`): the stored session, the user's row,
group names and reviewer scopes together. It accepts only what Django's own `auth.get_user`
would accept (same session row and expiry, same user id, a ModelBackend, the user active,
the session hash made with the current SECRET_KEY); anything else — including a hash made
with a fallback key — takes the full path below, which decides exactly as the pages do.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, load_backend
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db.models import (
    CharField,
    DateTimeField,
    IntegerField,
    Model,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.aggregates import StringAgg
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from approvals.models import ReviewerScope
from approvals.selectors import ReviewerReach, reviewer_reach
from console.prepared import PreparedQuery
from console.roles import group_names_subquery, groups_known
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


def _scope_ids() -> Subquery:
    """An annotation: the outer user's ReviewerScope agent ids, comma-joined (NULL: none)."""
    rows = ReviewerScope.objects.filter(user_id=OuterRef("pk")).values("user_id")
    joined = StringAgg(Cast("agent_id", CharField()), Value(","))
    return Subquery(rows.annotate(ids=joined).values("ids")[:1])


@functools.cache
def _access_query(session_model: type[Model]) -> PreparedQuery[User, User]:
    """The re-check's one query: the user, their unexpired stored session, groups, scopes."""

    def build(user_id: int, session_key: str, now: datetime) -> QuerySet[User]:
        sessions = session_model.objects.filter(  # type: ignore[attr-defined]
            session_key=session_key, expire_date__gt=now
        )
        return User.objects.filter(pk=user_id).annotate(
            session_data=Subquery(sessions.values("session_data")[:1]),
            group_names=group_names_subquery(),
            scope_ids=_scope_ids(),
        )[:1]

    return PreparedQuery(
        User, build, user_id=IntegerField(), session_key=CharField(), now=DateTimeField()
    )


def _unchanged(session_key: str, before: SocketAccess) -> SocketAccess | None:
    """The access, when one query shows nothing that ends or narrows it; None: ask fully."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    if not issubclass(store, DatabaseSessionStore):
        return None
    user: Any = _access_query(store.get_model_class()).first(
        user_id=before.user.pk, session_key=session_key, now=timezone.now()
    )
    if user is None or not user.session_data:
        return None
    session = store().decode(user.session_data)
    backend_path = session.get(BACKEND_SESSION_KEY)
    if str(session.get(SESSION_KEY)) != str(user.pk):
        return None
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    backend = load_backend(backend_path)
    if not isinstance(backend, ModelBackend) or type(backend).get_user is not ModelBackend.get_user:
        return None
    if not backend.user_can_authenticate(user):
        return None
    if not constant_time_compare(session.get(HASH_SESSION_KEY) or "", user.get_session_auth_hash()):
        return None
    groups_known(user, user.group_names)
    scoped = [int(agent_id) for agent_id in user.scope_ids.split(",")] if user.scope_ids else []
    reach = reviewer_reach(user, scoped)
    if reach is None or not reach.covers(before.reach):
        return None
    return SocketAccess(user=user, reach=reach)


def socket_access(session_key: str | None, *, before: SocketAccess | None = None) -> SocketAccess:
    """The socket's access now; AccessEnded when it must close. `before`: what it had."""
    if before is not None and session_key:
        unchanged = _unchanged(session_key, before)
        if unchanged is not None:
            return unchanged
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
