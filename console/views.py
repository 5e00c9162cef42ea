"""The landing redirect, a health probe and the page for a refused CSRF check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import requires_csrf_token
from django.views.decorators.http import require_safe

from console.roles import primary_role

ROLE_HOME = {"admin": "/agents/", "reviewer": "/approvals/", "auditor": "/audit/"}


@require_safe
@login_required
def home(request: HttpRequest) -> HttpResponse:
    role = primary_role(request.user)
    if role is None:
        # Sending them back to the login form they just passed would loop.
        raise PermissionDenied("Your account has no role yet; ask an admin to give you one.")
    return redirect(ROLE_HOME[role])


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


@requires_csrf_token
def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's own CSRF page shows its internals in DEBUG; people get the console's 403."""
    message = (
        "This form was out of date or opened elsewhere, so it was not sent. "
        "Go back, reload the page and try again."
    )
    return render(request, "403.html", {"exception": message}, status=403)
