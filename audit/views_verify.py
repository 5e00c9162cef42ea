"""The "Verify chain" pages of /audit/: the form that starts a run (POST, CSRF) with the
recent runs under it, and one run's page, whose status part htmx polls while it runs
(without JavaScript a Refresh link does the same). The work is `audit.verification`."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from audit import selectors, verification
from audit.models import ChainVerification, ChainVerificationStatus
from console.actors import request_actor
from console.errors import InvalidInput
from console.roles import Role
from console.web import render_page, role_required

RECENT_RUNS = 10


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


@role_required(Role.AUDITOR)
@require_http_methods(["GET", "POST"])
def verify(request: HttpRequest) -> HttpResponse:
    error = ""
    agent = (request.POST.get("agent") or "").strip()
    if request.method == "POST":
        try:
            run = verification.chain_verification_start(
                actor=request_actor(request), agent_slug=agent
            )
        except InvalidInput as exc:
            error = exc.message
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


@role_required(Role.AUDITOR)
@require_GET
def verification_detail(request: HttpRequest, pk: UUID) -> HttpResponse:
    run = selectors.get_chain_verification_for_user(request.user, pk)
    context = {"audit_tab": "verify", **_run_context(run)}
    return render_page(request, "audit/verification.html", context, partial="status")
