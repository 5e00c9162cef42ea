"""The portal's web kit, shared by every app's page views.

- `HtmxHttpRequest`: the request type of a portal view (django-htmx sets `request.htmx`).
- `role_required(*roles)`: the one gate. Anonymous visitors go to the login page, people
  without one of the roles get 403. It says nothing about methods: each view states those
  with `require_GET`/`require_POST`/`require_http_methods`.
- `render_page`: the whole page, or for a plain htmx request only its named partial.

Lookups stay with the owning app's access helpers (`agents.selectors.get_agent_for_user`,
`approvals.selectors.get_escalation_for_user`, `audit.selectors.get_record_for_user`): they
take the user and answer 404 for what the user may not see.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

from console.roles import Role, is_admin, is_auditor, is_reviewer


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


# Admins hold every role: an admin may open reviewer and auditor pages too.
_HOLDS: dict[Role, Callable[[Any], bool]] = {
    Role.ADMIN: is_admin,
    Role.REVIEWER: is_reviewer,
    Role.AUDITOR: is_auditor,
}


def role_required[V: Callable[..., HttpResponse]](*roles: Role) -> Callable[[V], V]:
    """Let through people holding any of `roles` (admins hold them all)."""
    if not roles:
        raise ValueError("role_required needs at least one role.")
    names = " or ".join(sorted({f"{role.label.lower()}s" for role in roles} | {"admins"}))

    def decorate(view: V) -> V:
        @wraps(view)
        def wrapped(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not any(_HOLDS[role](request.user) for role in roles):
                raise PermissionDenied(f"This page is for {names}.")
            return view(request, *args, **kwargs)

        return login_required(wrapped)  # type: ignore[return-value]

    return decorate


def is_partial_request(request: HttpRequest) -> bool:
    """An htmx request that swaps part of a page: not a boosted navigation, and not a
    history restore (the Back button with no snapshot), which both want the whole page."""
    htmx: HtmxDetails | None = getattr(request, "htmx", None)
    if not htmx:
        return False
    return not htmx.boosted and not htmx.history_restore_request


def render_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    partial: str | None = None,
    status: int = 200,
    push_url: str | None = None,
) -> HttpResponse:
    """The whole page, or for a partial htmx request only `template#partial`.

    The partial answers 200 whatever `status` says (htmx swaps only 2xx responses, so a
    filter error still replaces the results); `push_url`, when given, is the clean URL htmx
    pushes instead of the form's every empty field. `Vary: HX-Request` keeps caches from
    serving one shape for the other."""
    if partial and is_partial_request(request):
        response = render(request, f"{template}#{partial}", context)
        if push_url is not None:
            response["HX-Push-Url"] = push_url
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response
