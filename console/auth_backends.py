"""Login lockout (django-axes) for the login form."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend


class LockoutBackend(AxesStandaloneBackend):  # type: ignore[misc]
    """Counts failures of HTTP logins only.

    `authenticate()` called from trusted code without a request (management commands, the
    test client) has no client address to lock, so it is passed on to ModelBackend unchecked.
    """

    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
