"""The admin portal at /agents/: agents, hooks at both levels, custom agents and their v2
documents, tokens and revision history.

Views parse a form, call one service and redirect or render; an htmx request gets the named
partial of the same page. Every page also works as a plain link or a plain POST.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect

from agents import extensions, selectors, services
from agents.forms import (
    AgentCreateForm,
    AgentSettingsForm,
    CustomAgentForm,
    CustomAgentSettingsForm,
    DocumentForm,
    HookForm,
    TokenForm,
)
from agents.health import health_context
from agents.models import Agent, CustomAgent, Hook
from console.actors import request_actor
from console.api import yaml_dump
from console.errors import DomainError, InvalidInput
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required

GET_POST = require_http_methods(["GET", "POST"])


def _apply(form: Any, call: Callable[[dict[str, Any]], Any]) -> Any:
    """Run a service for a valid form; a DomainError it raises lands on the form's fields."""
    if not form.is_valid():
        return None
    try:
        return call(form.cleaned_data)
    except DomainError as exc:
        form.add_problems(exc)
        return None


def _go(
    request: HtmxHttpRequest, url: str, message: str = "", level: int = messages.SUCCESS
) -> HttpResponse:
    if message:
        messages.add_message(request, level, message)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _agent_page(agent: Agent, tab: str, **extra: Any) -> dict[str, Any]:
    return {"agent": agent, "tab": tab, **selectors.agent_tab_counts(agent), **extra}


def _scope_url(agent: Agent, custom_agent: CustomAgent | None, page: int = 1) -> str:
    if custom_agent is None:
        url = reverse("agents:detail", args=[agent.slug])
    else:
        url = reverse("agents:custom_agent", args=[agent.slug, custom_agent.name])
    return f"{url}?page={page}" if page > 1 else url


def _warned(warnings: dict[str, list[str]]) -> str:
    return "; ".join(f"{at or '/'}: {m}" for at, ms in warnings.items() for m in ms)


# Agents -----------------------------------------------------------------------------------


@role_required(Role.ADMIN)
@GET_POST
def agent_list(request: HtmxHttpRequest) -> HttpResponse:
    form = AgentCreateForm(request.POST or None)
    if request.method == "POST":
        agent = _apply(form, lambda d: services.agent_create(actor=request_actor(request), **d))
        if agent:
            url = reverse("agents:detail", args=[agent.slug])
            return _go(request, url, f"Created agent {agent.slug}.")
    page = selectors.page_of(selectors.agents_overview(request.user), request.GET.get("page"))
    context = {"agents": page.object_list, "page": page, "form": form}
    return render_page(request, "agents/list.html", context, partial="create-form")


@role_required(Role.ADMIN)
@require_safe
def agent_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    hooks = selectors.hook_groups(agent, None, request.GET.get("page"))
    context = _agent_page(
        agent,
        "hooks",
        hooks=hooks,
        custom_agent=None,
        agent_sections=extensions.agent_hooks_sections(agent),
        **health_context(agent, None),
    )
    return render_page(request, "agents/agent_hooks.html", context, partial="hooks")


@role_required(Role.ADMIN)
@require_POST
def agent_mode(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    url = reverse("agents:detail", args=[slug])
    try:
        services.agent_set_mode(
            actor=request_actor(request), agent=agent, mode=request.POST.get("mode", "")
        )
    except InvalidInput as exc:
        if not request.htmx:
            return _go(request, url, _warned(exc.fields), messages.ERROR)
        messages.error(request, _warned(exc.fields))
    if request.htmx:
        return render(request, "agents/agent_base.html#mode-banner", {"agent": agent})
    return _go(request, url, f"Mode is now {agent.mode}.")


@role_required(Role.ADMIN)
@GET_POST
def agent_settings(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    fields = ("display_name", "description", "webhook_url", "webhook_format")
    initial = {name: getattr(agent, name) for name in fields}
    form = AgentSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and _apply(
        form,
        lambda d: services.agent_settings_update(actor=request_actor(request), agent=agent, **d),
    ):
        return _go(request, reverse("agents:settings", args=[slug]), "Settings saved.")
    context = _agent_page(agent, "settings", form=form)
    return render_page(request, "agents/settings.html", context, partial="settings-form")


# Hooks (agent level and custom agent level) ------------------------------------------------


def _hook_saved(
    request: HtmxHttpRequest, hook: Hook, warnings: dict[str, list[str]]
) -> HttpResponse:
    if warnings:
        url = reverse("agents:hook_edit", args=[hook.agent.slug, hook.key])
        return _go(request, url, f"Saved hook “{hook.name}”, with warnings.", messages.WARNING)
    url = _scope_url(hook.agent, hook.custom_agent)
    return _go(request, url, f"Saved {hook.event} hook “{hook.name}”.")


def _hooks_changed(request: HtmxHttpRequest, hook: Hook, message: str) -> HttpResponse:
    """Row actions: htmx swaps the scope's hook list in place, a plain POST goes back to it."""
    agent, custom_agent = hook.agent, hook.custom_agent
    hooks = selectors.hook_groups(agent, custom_agent, request.POST.get("page"))
    if request.htmx:
        context = {"agent": agent, "custom_agent": custom_agent, "hooks": hooks, "oob": True}
        context.update(health_context(agent, custom_agent))
        return render(request, "agents/hooks_panel.html#hooks", context)
    return _go(request, _scope_url(agent, custom_agent, hooks.page.number), message)


@role_required(Role.ADMIN)
@GET_POST
def hook_create(request: HtmxHttpRequest, slug: str, name: str | None = None) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    custom_agent = selectors.get_custom_agent(agent, name) if name else None
    form = HookForm(request.POST or None, initial={"event": request.GET.get("event", "Stop")})
    if request.method == "POST":
        saved = _apply(
            form,
            lambda d: services.hook_create(
                actor=request_actor(request),
                agent=agent,
                custom_agent=custom_agent,
                event=d["event"],
                raw=d["raw"],
            ),
        )
        if saved:
            return _hook_saved(request, *saved)
    tab = "custom" if custom_agent else "hooks"
    context = _agent_page(agent, tab, custom_agent=custom_agent, form=form, hook=None)
    return render_page(request, "agents/hook_form.html", context, partial="hook-form")


@role_required(Role.ADMIN)
@GET_POST
def hook_edit(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    form = HookForm(request.POST or None, hook=hook)
    if request.method == "POST":
        saved = _apply(
            form,
            lambda d: services.hook_update(actor=request_actor(request), hook=hook, raw=d["raw"]),
        )
        if saved:
            return _hook_saved(request, *saved)
    else:
        form.show_warnings(selectors.hook_warnings(hook))
    tab = "custom" if hook.custom_agent else "hooks"
    context = _agent_page(hook.agent, tab, custom_agent=hook.custom_agent, form=form, hook=hook)
    return render_page(request, "agents/hook_form.html", context, partial="hook-form")


@role_required(Role.ADMIN)
@require_POST
def hook_enabled(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    enabled = request.POST.get("enabled") == "1"
    services.hook_set_enabled(actor=request_actor(request), hook=hook, enabled=enabled)
    return _hooks_changed(request, hook, f"{'Enabled' if enabled else 'Disabled'} {hook.name}.")


@role_required(Role.ADMIN)
@require_POST
def hook_move(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    offset = -1 if request.POST.get("direction") == "up" else 1
    services.hook_move(actor=request_actor(request), hook=hook, offset=offset)
    return _hooks_changed(request, hook, f"Moved {hook.name}.")


@role_required(Role.ADMIN)
@require_POST
def hook_delete(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    services.hook_delete(actor=request_actor(request), hook=hook)
    return _hooks_changed(request, hook, f"Deleted {hook.event} hook {hook.name}.")


# Custom agents -------------------------------------------------------------------------------


def _custom_page(
    request: HtmxHttpRequest, agent: Agent, form: Any = None, import_form: Any = None
) -> dict[str, Any]:
    page = selectors.page_of(selectors.custom_agents_overview(agent), request.GET.get("page"))
    deleted = selectors.deleted_custom_agent_names(agent)
    return _agent_page(
        agent,
        "custom",
        custom_agents=page.object_list,
        page=page,
        deleted_names=deleted[: selectors.DELETED_NAMES_SHOWN],
        deleted_more=max(0, len(deleted) - selectors.DELETED_NAMES_SHOWN),
        form=form or CustomAgentForm(),
        import_form=import_form or DocumentForm(),
    )


@role_required(Role.ADMIN)
@GET_POST
def custom_agent_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    form = CustomAgentForm(request.POST or None)
    if request.method == "POST":
        created = _apply(
            form,
            lambda d: services.custom_agent_create(actor=request_actor(request), agent=agent, **d),
        )
        if created:
            url = _scope_url(agent, created)
            return _go(request, url, f"Created custom agent {created.name}.")
    context = _custom_page(request, agent, form=form)
    return render_page(request, "agents/custom_agents.html", context, partial="custom-agent-form")


@role_required(Role.ADMIN)
@require_safe
def custom_agent_detail(request: HtmxHttpRequest, slug: str, name: str) -> HttpResponse:
    custom_agent = selectors.get_custom_agent_for_user(request.user, slug, name)
    hooks = selectors.hook_groups(custom_agent.agent, custom_agent, request.GET.get("page"))
    context = _agent_page(
        custom_agent.agent,
        "custom",
        custom_agent=custom_agent,
        subtab="hooks",
        hooks=hooks,
        **health_context(custom_agent.agent, custom_agent),
    )
    return render_page(request, "agents/custom_agent.html", context, partial="hooks")


@role_required(Role.ADMIN)
@GET_POST
def custom_agent_settings(request: HtmxHttpRequest, slug: str, name: str) -> HttpResponse:
    custom_agent = selectors.get_custom_agent_for_user(request.user, slug, name)
    fields = ("instructions", "handoff_description", "enable_vanilla_mode")
    initial = {field: getattr(custom_agent, field) for field in fields}
    form = CustomAgentSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and _apply(
        form,
        lambda d: services.custom_agent_update(
            actor=request_actor(request), custom_agent=custom_agent, **d
        ),
    ):
        return _go(request, request.path, f"Saved settings of {name}.")
    context = _agent_page(
        custom_agent.agent, "custom", custom_agent=custom_agent, subtab="settings", form=form
    )
    return render_page(
        request, "agents/custom_settings.html", context, partial="custom-settings-form"
    )


@role_required(Role.ADMIN)
@require_POST
def custom_agent_delete(request: HtmxHttpRequest, slug: str, name: str) -> HttpResponse:
    custom_agent = selectors.get_custom_agent_for_user(request.user, slug, name)
    services.custom_agent_delete(actor=request_actor(request), custom_agent=custom_agent)
    url = reverse("agents:custom_agents", args=[slug])
    return _go(request, url, f"Deleted custom agent {name}; its history is kept.")


@role_required(Role.ADMIN)
@require_safe
def custom_agent_export(request: HtmxHttpRequest, slug: str, name: str) -> HttpResponse:
    custom_agent = selectors.get_custom_agent_for_user(request.user, slug, name)
    body = yaml_dump(selectors.custom_agent_as_document(custom_agent))
    response = HttpResponse(body, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.yaml"'
    return response


# Tokens ---------------------------------------------------------------------------------------


@role_required(Role.ADMIN)
@GET_POST
@never_cache  # the answer to a POST holds a token's plaintext: no cache may keep it
def agent_tokens(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    form = TokenForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        # Rendered, not redirected: the plaintext exists only in this one response.
        issued = services.agent_token_issue(
            actor=request_actor(request), agent=agent, name=form.cleaned_data["name"]
        )
        form = TokenForm()
    page = selectors.page_of(selectors.agent_tokens(agent), request.GET.get("page"))
    context = _agent_page(
        agent, "tokens", form=form, tokens=page.object_list, page=page, issued=issued
    )
    return render(request, "agents/tokens.html", context)


@role_required(Role.ADMIN)
@require_POST
def agent_token_revoke(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    token = services.agent_token_revoke(
        actor=request_actor(request), token=selectors.get_agent_token(agent, pk)
    )
    page = selectors.page_of(selectors.agent_tokens(agent), request.POST.get("page"))
    if request.htmx:
        context = {"agent": agent, "tokens": page.object_list, "page": page}
        return render(request, "agents/tokens.html#token-rows", context)
    url = reverse("agents:tokens", args=[slug])
    if page.number > 1:
        url += f"?page={page.number}"
    return _go(request, url, f"Revoked token {token.name} ({token.prefix}…).")


# History --------------------------------------------------------------------------------------


@role_required(Role.ADMIN)
@require_safe
def history(request: HtmxHttpRequest, slug: str, name: str = "") -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    page = selectors.page_of(selectors.revisions_list(agent, name), request.GET.get("page"))
    if name and not page.paginator.count:
        raise Http404("No history for that custom agent.")
    custom_agent = selectors.find_custom_agent(agent, name)
    tab = "custom" if name else "history"
    context = _agent_page(
        agent,
        tab,
        revisions=page.object_list,
        page=page,
        scope_name=name,
        custom_agent=custom_agent,
        subtab="history",
    )
    return render(request, "agents/history.html", context)


@role_required(Role.ADMIN)
@require_safe
def revision_detail(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    revision = selectors.get_revision(agent, number)
    previous, lines = selectors.revision_diff(revision)
    name = revision.custom_agent_name
    custom_agent = selectors.find_custom_agent(agent, name)
    tab = "custom" if name else "history"
    context = _agent_page(
        agent,
        tab,
        revision=revision,
        previous=previous,
        lines=lines,
        scope_name=name,
        custom_agent=custom_agent,
        subtab="history",
    )
    return render_page(request, "agents/revision.html", context, partial="diff")
