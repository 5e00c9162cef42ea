"""The "Connect an agent" portal page (/agents/<slug>/connect/): choose a runtime and a
custom agent, read or download its hook settings, issue a token for it.

GET renders the settings for the chosen runtime/custom agent/form (a plain form submit, or
htmx swapping the `connect-file` partial). POST issues an agent token through the token
service and shows it once, in the environment lines; that answer is never cached.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse
from django.views.decorators.http import require_http_methods

from agents import selectors, services
from agents.forms import TokenForm
from agents.views import _agent_page
from console.actors import request_actor
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required
from console_client.runtimes import CLAUDE_CODE, RUNTIMES
from runtimes.connect import FORMS, connect_file

RUNTIME_LABELS = {
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "gemini-cli": "Gemini CLI",
    "cursor": "Cursor",
    "copilot": "GitHub Copilot",
}


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def agent_connect(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    params = request.POST if request.method == "POST" else request.GET
    runtime = params.get("runtime") or CLAUDE_CODE
    runtime = runtime if runtime in RUNTIMES else CLAUDE_CODE
    form_name = params.get("form") or FORMS[runtime][0]
    form_name = form_name if form_name in FORMS[runtime] else FORMS[runtime][0]
    custom_agents = list(selectors.custom_agents_overview(agent))
    custom_agent = next((c for c in custom_agents if c.name == params.get("custom_agent")), None)
    base_url = request.build_absolute_uri("/").rstrip("/")
    found = connect_file(
        agent=agent, custom_agent=custom_agent, runtime=runtime, base_url=base_url, form=form_name
    )
    token_form = TokenForm(request.POST if request.method == "POST" else None)
    issued = None
    if request.method == "POST" and token_form.is_valid():
        name = token_form.cleaned_data["name"] or f"{runtime} connect"
        issued = services.agent_token_issue(actor=request_actor(request), agent=agent, name=name)
        token_form = TokenForm()
    query = {"agent": agent.slug, "form": form_name, "download": "1"}
    if custom_agent is not None:
        query["custom_agent"] = custom_agent.name
    context = _agent_page(
        agent,
        "connect",
        runtimes=[(key, RUNTIME_LABELS[key]) for key in RUNTIMES],
        runtime=runtime,
        forms=FORMS[runtime],
        form_name=form_name,
        custom_agents=custom_agents,
        custom_agent=custom_agent,
        file=found,
        base_url=base_url,
        download_url=f"/api/v1/connect/{runtime}?{urlencode(query)}",
        token_form=token_form,
        issued=issued,
        needs_shim=runtime != CLAUDE_CODE,
    )
    partial = "connect-file" if request.method == "GET" else None
    response = render_page(request, "runtimes/connect.html", context, partial=partial)
    if issued is not None:
        # The plaintext token is in this answer only: no cache may keep it.
        response["Cache-Control"] = "no-store"
    return response
