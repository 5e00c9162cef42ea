"""The landing redirect and a health probe."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect

from console.roles import primary_role

ROLE_HOME = {"admin": "/agents/", "reviewer": "/approvals/", "auditor": "/audit/"}


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect(ROLE_HOME.get(primary_role(request.user) or "", "/accounts/login/"))


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
