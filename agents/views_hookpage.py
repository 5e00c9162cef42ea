"""A hook's own page: what it is, the revisions of its scope, and the sections apps above
agents add to it (agents/extensions.py: the audit app's activity, counted from the interception
records that name its key)."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_safe

from agents import extensions, selectors
from agents.views import _agent_page
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required


@role_required(Role.ADMIN)
@require_safe
def hook_overview(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    context = _agent_page(
        hook.agent,
        "custom" if hook.custom_agent else "hooks",
        custom_agent=hook.custom_agent,
        hook=hook,
        hook_sections=extensions.hook_page_sections(request.user, hook),
        revisions=selectors.hook_revisions(hook),
    )
    return render_page(request, "agents/hook_overview.html", context)
