"""The "Verify chain" pages of /audit/: the form that starts a run (POST, CSRF) with the
recent runs under it, and one run's page, whose status part htmx polls while it runs
(without JavaScript a Refresh link does the same). The work is `audit.verification`."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from audit import selectors, verification
from audit.models import ChainVerification, ChainVerificationStatus
from console.actors import request_actor
from console.roles import is_auditor

RECENT_RUNS = 10


def _refuse_non_auditors(request: HttpRequest) -> None:
    if not is_auditor(request.user):
        raise PermissionDenied("Verifying the record chains is for auditors and admins.")


def _rows(run: ChainVerification) -> list[dict[str, Any]]:
    """Each chain's report, a broken one with a link to its first broken record."""
    rows = []
    for item in run.results:
        problem = item.get("problem")
        record_id = problem.get("record_id") if problem else None
        rows.append(
            {
                **item,
                "record_url": reverse("audit:record", args=[record_id]) if record_id else "",
            }
        )
    return rows


def _run_context(run: ChainVerification) -> dict[str, Any]:
    return {
        "run": run,
        "rows": _rows(run),
        "running": run.status == ChainVerificationStatus.RUNNING,
        "total": sum(item.get("verified", 0) for item in run.results),
    }


@require_http_methods(["GET", "POST"])
@login_required
def verify(request: HttpRequest) -> HttpResponse:
    _refuse_non_auditors(request)
    error = ""
    agent = (request.POST.get("agent") or "").strip()
    if request.method == "POST":
        try:
            run = verification.chain_verification_start(
                actor=request_actor(request), agent_slug=agent
            )
        except verification.UnknownAgent as exc:
            error = str(exc)
        else:
            return HttpResponseRedirect(reverse("audit:verification", args=[run.pk]))
    recent = selectors.chain_verifications_visible_to(request.user)[:RECENT_RUNS]
    context = {
        "audit_tab": "verify",
        "agents": selectors.agent_slugs(),
        "agent": agent,
        "error": error,
        "recent": [_run_context(run) for run in recent],
    }
    return render(request, "audit/verify.html", context, status=400 if error else 200)


@require_GET
@login_required
def verification_detail(request: HttpRequest, pk: UUID) -> HttpResponse:
    _refuse_non_auditors(request)
    run = selectors.get_chain_verification_for_user(request.user, pk)
    context = {"audit_tab": "verify", **_run_context(run)}
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.boosted and not htmx.history_restore_request:
        return render(request, "audit/verification.html#status", context)
    return render(request, "audit/verification.html", context)
