"""The user pages under /users/ (admins only; plain forms, no script needed).

Pages that show a secret once (an invitation link, a new token's plaintext) render it in the
answer to the POST instead of redirecting, and are never cached."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from agents.views import GET_POST, admin_required
from approvals.selectors import slack_member_of
from console import services as console_services
from console.actors import request_actor
from users import selectors, services
from users.forms import RolesForm, SlackForm, TokenForm, UserCreateForm
from users.services import UserProblems


def _detail(
    request: HttpRequest, row: selectors.UserRow, status: int = 200, **extra: Any
) -> HttpResponse:
    viewer = request.user
    initial = {"roles": row.roles, "agents": row.agents}
    context = {
        "row": row,
        "person": row.user,
        "form": RolesForm(initial=initial, agents=selectors.scope_choices(viewer)),
        "token_form": TokenForm(),
        "slack_form": SlackForm(initial={"slack_user_id": slack_member_of(row.user)}),
        "tokens": selectors.personal_tokens(row.user),
        "is_self": row.user.pk == viewer.pk,
        "invitation_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
        **extra,
    }
    return render(request, "users/detail.html", context, status=status)


def _to_detail(request: HttpRequest, user: User, message: str) -> HttpResponse:
    messages.success(request, message)
    return redirect("users:detail", pk=user.pk)


@admin_required
@require_safe
def user_list(request: HttpRequest) -> HttpResponse:
    page, rows = selectors.user_rows(request.user, request.GET.get("page"))
    return render(request, "users/list.html", {"page": page, "rows": rows})


@admin_required
@GET_POST
@never_cache  # the answer to a POST can hold an invitation link
def user_create(request: HttpRequest) -> HttpResponse:
    form = UserCreateForm(request.POST or None, agents=selectors.scope_choices(request.user))
    if request.method == "POST" and form.is_valid():
        try:
            created = services.user_create(
                actor=request_actor(request),
                username=form.cleaned_data["username"],
                roles=form.cleaned_data["roles"],
                agent_slugs=form.cleaned_data["agents"],
                password=form.cleaned_data["password"],
            )
        except UserProblems as exc:
            form.add_problems(exc)
        else:
            if created.invitation_path is None:
                return _to_detail(request, created.user, f"Created {created.user.username}.")
            row = selectors.get_user_for_admin(request.user, created.user.pk)
            link = request.build_absolute_uri(created.invitation_path)
            return _detail(request, row, invitation=link, just_created=True)
    return render(request, "users/new.html", {"form": form})


@admin_required
@GET_POST
def user_detail(request: HttpRequest, pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    if request.method == "GET":
        return _detail(request, row)
    form = RolesForm(request.POST, agents=selectors.scope_choices(request.user))
    if form.is_valid():
        try:
            changed = services.user_update(
                actor=request_actor(request),
                user=row.user,
                roles=form.cleaned_data["roles"],
                agent_slugs=form.cleaned_data["agents"],
            )
        except UserProblems as exc:
            form.add_problems(exc)
        else:
            message = "Saved." if changed else "Nothing changed."
            return _to_detail(request, row.user, message)
    return _detail(request, row, form=form)


@admin_required
@require_POST
@never_cache
def user_invitation(request: HttpRequest, pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    try:
        path = services.user_invitation_issue(actor=request_actor(request), user=row.user)
    except UserProblems as exc:
        return _detail(request, row, status=409, problems=exc.problems[""])
    return _detail(request, row, invitation=request.build_absolute_uri(path))


@admin_required
@GET_POST
def user_deactivate(request: HttpRequest, pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    context: dict[str, Any] = {"row": row, "person": row.user}
    if request.method == "POST":
        try:
            done = services.user_deactivate(actor=request_actor(request), user=row.user)
        except UserProblems as exc:
            context["problems"] = exc.problems[""]
            return render(request, "users/deactivate.html", context, status=409)
        return _to_detail(
            request,
            row.user,
            f"Deactivated {row.user.username}: {done.sessions_ended} session(s) ended, "
            f"{done.tokens_revoked} API token(s) revoked, open inbox pages disconnected.",
        )
    return render(request, "users/deactivate.html", context)


@admin_required
@require_POST
def user_reactivate(request: HttpRequest, pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    try:
        services.user_reactivate(actor=request_actor(request), user=row.user)
    except UserProblems as exc:
        return _detail(request, row, status=409, problems=exc.problems[""])
    return _to_detail(request, row.user, f"Reactivated {row.user.username}.")


@admin_required
@require_POST
def user_slack(request: HttpRequest, pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    form = SlackForm(request.POST)
    if form.is_valid():
        wanted = form.cleaned_data["slack_user_id"].strip()
        try:
            changed = services.user_slack_set(
                actor=request_actor(request), user=row.user, slack_user_id=wanted
            )
        except UserProblems as exc:
            form.add_problems(exc)
        else:
            said = f"Slack member set to {wanted}." if wanted else "Slack member unlinked."
            return _to_detail(request, row.user, said if changed else "Nothing changed.")
    return _detail(request, row, slack_form=form)


@admin_required
@require_POST
@never_cache  # the answer holds the token's plaintext
def token_issue(request: HttpRequest, pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            issued = services.personal_token_issue(
                actor=request_actor(request), user=row.user, name=form.cleaned_data["name"]
            )
        except UserProblems as exc:
            form.add_problems(exc)
        else:
            row = selectors.get_user_for_admin(request.user, pk)
            return _detail(request, row, issued=issued)
    return _detail(request, row, token_form=form)


@admin_required
@require_POST
def token_revoke(request: HttpRequest, pk: int, token_pk: int) -> HttpResponse:
    row = selectors.get_user_for_admin(request.user, pk)
    token = selectors.get_personal_token(row.user, token_pk)
    revoked = console_services.api_token_revoke(actor=request_actor(request), token=token)
    label = f"{token.name} ({token.prefix}…)"
    message = f"Revoked token {label}." if revoked else f"Token {label} was already revoked."
    return _to_detail(request, row.user, message)
