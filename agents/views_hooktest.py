""" "Test this hook" in the portal: GET renders the panel, POST runs the hook and renders
the result (htmx partials; plain requests get the same fragments).

The panel posts the hook form's current fields (hx-include="#hook-form"), the event and
the edited sample `context` JSON. The run happens in agents.tasks.hook_test_run_task.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from agents import selectors
from agents.forms import HookForm
from agents.hook_testing import hook_test_validate, sample_context
from agents.models import Agent, Hook
from agents.tasks import HOOK_TEST_TASK_MARGIN_SECONDS, hook_test_run_task
from agents.validation import EVENTS, TIMEOUT_DEFAULT
from console.errors import InvalidInput
from console.parsers import ensure_storable, json_loads
from console.roles import is_admin

PANEL = "agents/_hook_test_panel.html"
RESULT = "agents/_hook_test_result.html"


def _hook(request: HttpRequest, agent: Agent, key: str) -> Hook | None:
    if not key:
        return None
    hook = selectors.get_hook_for_user(request.user, key)
    return hook if hook.agent_id == agent.pk else None


def _panel(request: HttpRequest, agent: Agent) -> HttpResponse:
    hook = _hook(request, agent, request.GET.get("hook", ""))
    event = hook.event if hook else request.GET.get("event", "PostToolUse")
    if event not in EVENTS:
        event = "PostToolUse"
    name = hook.custom_agent.name if hook and hook.custom_agent else agent.slug
    context = json.dumps(sample_context(event, name), indent=2)
    return render(
        request, PANEL, {"agent": agent, "hook": hook, "event": event, "context_json": context}
    )


def _errors(problems: dict[str, list[str]]) -> list[str]:
    return [
        f"{pointer or '/'}: {message}" for pointer, items in problems.items() for message in items
    ]


@login_required
@require_http_methods(["GET", "POST"])
def hook_test(request: HttpRequest, slug: str) -> HttpResponse:
    if not is_admin(request.user):
        raise PermissionDenied("Only admins may test hooks.")
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    if request.method == "GET":
        return _panel(request, agent)
    hook = _hook(request, agent, request.POST.get("hook", ""))
    form = HookForm(request.POST)
    raw: dict[str, Any] = {}
    errors: list[str] = []
    if form.is_valid():
        raw = {k: v for k, v in form.cleaned_data["raw"].items() if k != "enabled"}
    else:
        errors += [
            f"{field}: {message}" for field, items in form.errors.items() for message in items
        ]
    try:
        context = ensure_storable(json_loads(request.POST.get("context") or "{}"))
    except InvalidInput as exc:
        errors += [f"/context{at}: {m}" for at, messages in exc.fields.items() for m in messages]
        context = None
    except ValueError as exc:
        errors.append(f"/context: not valid JSON ({exc}).")
        context = None
    event = request.POST.get("event", "")
    if not errors:
        try:
            definition, _ = hook_test_validate(hook_definition=raw, event=event, context=context)
        except InvalidInput as exc:
            errors += _errors(exc.fields)
    if errors:
        return render(request, RESULT, {"errors": errors}, status=400)
    timeout = int(definition.get("timeout", TIMEOUT_DEFAULT)) + HOOK_TEST_TASK_MARGIN_SECONDS
    outcome = hook_test_run_task.delay(
        actor_id=request.user.pk,
        hook_definition=raw,
        event=event,
        context=context,
        agent_id=agent.pk,
        hook_id=hook.pk if hook else None,
    ).get(timeout=timeout)
    return render(request, RESULT, {"outcome": outcome, "event": event})
