"""The user a stored session still authenticates, for connections that outlive one request.

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
from django.http import HttpRequest


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
