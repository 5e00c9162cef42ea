"""The landing redirect and a health probe."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
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
