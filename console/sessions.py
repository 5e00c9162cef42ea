"""The user a stored session still authenticates, for connections that outlive one request,
and ending every session of a user.

A websocket is authenticated once, at its handshake; a logout, an expired or flushed session,
a password change (the session's auth hash) or a deactivation must still end what it may
read. `session_user` asks exactly what Django asks on every HTTP request (auth.get_user on a
freshly loaded session), so the socket and the pages never disagree.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.http import HttpRequest
from django.utils import timezone


def session_user(session_key: str | None) -> Any | None:
    """The active user the stored session `session_key` authenticates now, else None."""
    if not session_key:
        return None
    engine = import_module(settings.SESSION_ENGINE)
    request = HttpRequest()
    request.session = engine.SessionStore(session_key)
    user = auth.get_user(request)
    if not user.is_authenticated or not user.is_active:
        return None
    return user


def sessions_end_for_user(user_id: int) -> int:
    """Delete every unexpired stored session of `user_id`; how many there were.

    Sessions are not indexed by user, so each live one is decoded: a scan that is fine for
    the rare admin action that calls it (a deactivation), not for a request path."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    if not issubclass(store, DatabaseSessionStore):
        raise NotImplementedError(f"{settings.SESSION_ENGINE} cannot list a user's sessions")
    model = store.get_model_class()
    decoder = store()
    live = model.objects.filter(expire_date__gt=timezone.now())
    keys = [
        row.session_key
        for row in live.only("session_key", "session_data").iterator(chunk_size=500)
        if str(decoder.decode(row.session_data).get(SESSION_KEY)) == str(user_id)
    ]
    if keys:
        model.objects.filter(session_key__in=keys).delete()
    return len(keys)
