"""Reviewer pages: the live inbox (/approvals/), decisions from it, bulk decisions, history,
one escalation's detail page (/approvals/<id>/), and the page a signed decision link
opens (approvals/links.py).

Decisions call the same service as the API. htmx requests get the re-rendered row (or
nothing, which removes it) plus an out-of-band flash; plain form posts redirect back.
A bulk decision posted without the page's script is first shown back for confirmation
(how many, which tools); with the script, its undo bar said so before the request left.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.selectors import hook_names
from approvals import services
from approvals.forms import HistoryFilterForm, parse_args_text
from approvals.history_selectors import escalation_detail, history_for
from approvals.links import escalation_id_from_token
from approvals.models import Escalation, VoteOutcome
from approvals.presenters import arguments_diff, transcript_view
from approvals.selectors import (
    PendingOrder,
    agents_decidable_by,
    effective_status,
    get_escalation_for_user,
    inbox_page,
    pending_count,
    pending_for,
    pending_order,
    pending_row,
)
from console.actors import request_actor
from console.errors import Conflict, DomainError, InvalidInput
from console.roles import Role
from console.web import HtmxHttpRequest, role_required

HISTORY_PAGE_SIZE = 50
BULK_MAX = 200


@never_cache  # rows carry tool arguments: not kept for the Back button after logout
@role_required(Role.REVIEWER)
@require_GET
def inbox(request: HtmxHttpRequest) -> HttpResponse:
    order = pending_order(request.GET.get("sort"))
    page = inbox_page(request.user, order=order)
    context = {
        "escalations": page.rows,
        "pending_total": page.total,
        "inbox_rows": settings.CONSOLE_INBOX_ROWS,
        "tab": "pending",
        "order": order,
        "orders": PendingOrder.choices,
    }
    return render(request, "approvals/inbox.html", context)


@never_cache
@role_required(Role.REVIEWER)
@require_GET
def detail(request: HtmxHttpRequest, pk: UUID) -> HttpResponse:
    escalation = get_escalation_for_user(request.user, pk)
    facts = escalation_detail(request.user, escalation)
    diff, more = (
        arguments_diff(escalation.arguments, escalation.approved_arguments)
        if escalation.arguments_edited
        else ([], 0)
    )
    context = {
        "escalation": escalation,
        "facts": facts,
        "status": effective_status(escalation),
        "my_vote": next((v for v in facts.votes if v.reviewer_id == request.user.pk), None),
        "approvals": sum(1 for v in facts.votes if v.outcome == VoteOutcome.APPROVE),
        "diff": diff,
        "diff_more": more,
        "transcript": transcript_view(escalation.transcript),
        "hook": facts.hooks.get(escalation.hook_key),
        "rule_hooks": [(key, facts.hooks.get(key)) for key in facts.rule_hooks or []],
    }
    return render(request, "approvals/detail.html", context)


@never_cache
@role_required(Role.REVIEWER)
@require_GET
def history(request: HtmxHttpRequest) -> HttpResponse:
    form = HistoryFilterForm(request.GET or None)
    # A filter the form refuses (e.g. a day at the end of the calendar) lists nothing.
    invalid = form.is_bound and not form.is_valid()
    rows = history_for(request.user, form.filters())
    if invalid:
        rows = rows.none()
    page = Paginator(rows, HISTORY_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "agents": agents_decidable_by(request.user).values_list("slug", flat=True),
        "tab": "history",
        "pending_total": pending_count(request.user),
    }
    return render(request, "approvals/history.html", context, status=400 if invalid else 200)


def _flash(level: str, text: str) -> str:
    return render_to_string("approvals/frames.html#flash", {"level": level, "text": text})


def _row_or_nothing(request: HtmxHttpRequest, pk: UUID, extra: dict[str, Any]) -> str:
    escalation = pending_row(request.user, pk)
    if escalation is None:
        return ""
    context = {"escalation": escalation, "now": timezone.now(), **extra}
    return render_to_string("approvals/inbox.html#row", context, request=request).strip()


def _answer(
    request: HtmxHttpRequest, pk: UUID, level: str, text: str, **extra: Any
) -> HttpResponse:
    if not request.htmx:
        getattr(messages, level)(request, text)
        # A fixed choice, never a URL: the detail page's forms come back to it.
        if request.POST.get("return_to") == "detail":
            return redirect("approvals:detail", pk=pk)
        return redirect("approvals:inbox")
    return HttpResponse(_row_or_nothing(request, pk, extra) + _flash(level, text))


@never_cache
@role_required(Role.REVIEWER)
@require_POST
def decide(request: HtmxHttpRequest, pk: UUID) -> HttpResponse:
    escalation = get_escalation_for_user(request.user, pk, write=True)
    outcome = request.POST.get("outcome", "")
    reason = request.POST.get("reason", "")
    args, errors = parse_args_text(request.POST.get("args"))
    if not errors:
        try:
            result = services.escalation_decide(
                escalation=escalation,
                actor=request_actor(request),
                outcome=outcome,
                reason=reason,
                args=args,
            )
        except InvalidInput as exc:
            errors = exc.fields
        except Conflict as exc:
            return _answer(request, pk, "error", str(exc))
    if errors:
        text = "; ".join(f"{at or 'body'}: {' '.join(msgs)}" for at, msgs in errors.items())
        typed = {"reason": reason, "args_text": request.POST.get("args")}
        return _answer(request, pk, "error", text, errors=errors, typed=typed)
    what = escalation.tool_name or escalation.interception_point
    done = result.escalation
    if result.final:
        edited = " with edited arguments" if done.arguments_edited else ""
        return _answer(request, pk, "success", f"{what}: {done.status}{edited}.")
    tally = f"{done.votes.filter(outcome=VoteOutcome.APPROVE).count()}/{done.approvals_required}"
    return _answer(request, pk, "success", f"{what}: your approval counted ({tally}).")


@never_cache
@role_required(Role.REVIEWER)
@require_POST
def bulk_decide(request: HtmxHttpRequest) -> HttpResponse:
    outcome = request.POST.get("outcome", "")
    reason = request.POST.get("reason", "").strip()
    ids = request.POST.getlist("ids")[:BULK_MAX]
    done, refused = 0, []
    if outcome not in VoteOutcome.values:
        refused.append("Choose approve or reject.")
    elif outcome == VoteOutcome.REJECT and not reason:
        refused.append("Rejecting needs a reason.")
    elif not ids:
        refused.append("Select at least one escalation.")
    elif not request.htmx and request.POST.get("confirmed") != "1":
        return _bulk_confirmation(request, outcome, reason, ids)
    else:
        for raw in ids:
            try:
                escalation = get_escalation_for_user(request.user, raw, write=True)
                services.escalation_decide(
                    escalation=escalation,
                    actor=request_actor(request),
                    outcome=outcome,
                    reason=reason,
                )
                done += 1
            except DomainError as exc:
                refused.append(str(exc))
            except Http404:
                refused.append("An escalation is not visible to you.")
    verb = "approved" if outcome == VoteOutcome.APPROVE else "rejected"
    text = f"{done} {verb}." + (f" {len(refused)} refused: {refused[0]}" if refused else "")
    level = "success" if done and not refused else "warning" if done else "error"
    if not request.htmx:
        getattr(messages, level)(request, text)
        return redirect("approvals:inbox")
    page = inbox_page(request.user, order=pending_order(request.POST.get("sort")))
    rows = render_to_string(
        "approvals/frames.html#rows",
        {"escalations": page.rows, "now": timezone.now()},
        request=request,
    )
    return HttpResponse(rows + _flash(level, text))


def _link_context(user: Any, escalation: Escalation) -> dict[str, Any]:
    votes = list(escalation.votes.all())
    return {
        "escalation": escalation,
        "hook_name": hook_names([escalation.hook_key]).get(escalation.hook_key, ""),
        "status": effective_status(escalation),
        "votes": votes,
        "my_vote": next((v.outcome for v in votes if v.reviewer_id == user.pk), None),
        "approvals": sum(1 for v in votes if v.outcome == VoteOutcome.APPROVE),
        "pending_total": pending_count(user),
    }


def _decide_from_link(request: HtmxHttpRequest, escalation: Escalation) -> None:
    outcome = request.POST.get("outcome", "")
    try:
        result = services.escalation_decide(
            escalation=escalation,
            actor=request_actor(request),
            outcome=outcome,
            reason=request.POST.get("reason", ""),
        )
    except InvalidInput as exc:
        messages.error(request, " ".join(m for msgs in exc.fields.values() for m in msgs))
    except Conflict as exc:
        messages.error(request, f"Nothing decided: {exc}")
    else:
        done = result.escalation
        text = done.status if result.final else "your approval counted"
        messages.success(request, f"{done.tool_name or done.interception_point}: {text}.")


@never_cache  # shows tool arguments
@role_required(Role.REVIEWER)
@require_http_methods(["GET", "POST"])
def decision_link(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """A signed link from a webhook: the call and Approve/Reject for a reviewer of its agent;
    once decided, the decision. POST decides, then redirects back here."""
    pk = escalation_id_from_token(token)
    if pk is None:
        return render(request, "approvals/link.html", {"invalid": True}, status=404)
    escalation = get_escalation_for_user(request.user, pk, write=True)
    if request.method == "POST":
        _decide_from_link(request, escalation)
        return redirect("approvals:link", token=token)
    return render(request, "approvals/link.html", _link_context(request.user, escalation))


def _bulk_confirmation(
    request: HtmxHttpRequest, outcome: str, reason: str, ids: list[str]
) -> HttpResponse:
    """Without the page's script nothing stated the selection yet: show it, act on a second
    post. Only the rows this reviewer may still decide are carried over."""
    wanted = []
    for raw in ids:
        try:
            wanted.append(UUID(raw))
        except ValueError:
            continue
    escalations = list(pending_for(request.user).filter(pk__in=wanted))
    context = {
        "escalations": escalations,
        "outcome": outcome,
        "reason": reason,
        "dropped": len(ids) - len(escalations),
        "tab": "pending",
    }
    return render(request, "approvals/bulk_confirm.html", context)
