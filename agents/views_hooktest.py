""" "Test this hook" in the portal.

GET renders the panel (the hook form loads it into its #hook-test-panel slot; without
JavaScript it is a page of its own). POST checks the sample, says so when the hook would not
run for it, and otherwise starts agents.tasks.hook_test_run_task without waiting for it: the
answer is a status that polls `hook_test_status` until the result is there (htmx every
second; without JavaScript the page refreshes itself and has a Refresh link). When Celery
runs tasks in-process (the embedded default) the result is there at once and shown directly.

The panel posts the hook form's current fields (hx-include="#hook-form"), the event and
the edited sample `context` JSON; a plain POST that carries no hook fields tests the saved
hook named by `hook`.
"""

from __future__ import annotations

import json
from typing import Any

from celery.result import AsyncResult
from django.core import signing
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from agents import selectors
from agents.forms import HookForm
from agents.hook_testing import hook_test_skip_reason, hook_test_validate, sample_context
from agents.models import Agent, Hook
from agents.tasks import hook_test_run_task
from agents.validation import EVENTS, ValidationFailed
from agents.views import _agent_page
from console.parsers import DocumentRefused, ensure_storable, json_loads
from console.roles import Role
from console.web import HtmxHttpRequest, render_page, role_required

PAGE = "agents/hook_test.html"
STATUS_SALT = "agents.hook_test_status"
# A status link outlives any run: the hook's timeout is at most 300 s.
STATUS_MAX_AGE_SECONDS = 3600


def _hook(request: HtmxHttpRequest, agent: Agent, key: str) -> Hook | None:
    return selectors.get_hook_for_user(request.user, agent.slug, key) if key else None


def _show(
    request: HtmxHttpRequest, agent: Agent, partial: str, status: int = 200, **values: Any
) -> HttpResponse:
    context = _agent_page(agent, "custom" if values.get("custom_agent") else "hooks", **values)
    return render_page(request, PAGE, context, partial=partial, status=status)


def _panel_values(agent: Agent, hook: Hook | None, event: str, text: str = "") -> dict[str, Any]:
    name = hook.custom_agent.name if hook and hook.custom_agent else agent.slug
    return {
        "hook": hook,
        "custom_agent": hook.custom_agent if hook else None,
        "event": event,
        "context_json": text or json.dumps(sample_context(event, name), indent=2),
    }


def _definition(request: HtmxHttpRequest, hook: Hook | None) -> tuple[dict[str, Any], list[str]]:
    if hook is not None and "type" not in request.POST:
        # A plain form without the editor's fields: the saved hook.
        return {k: v for k, v in hook.definition.items() if k != "enabled"}, []
    form = HookForm(request.POST)
    if form.is_valid():
        return {k: v for k, v in form.cleaned_data["raw"].items() if k != "enabled"}, []
    return {}, [f"{field}: {message}" for field, items in form.errors.items() for message in items]


def _sample(text: str) -> tuple[Any, list[str]]:
    try:
        return ensure_storable(json_loads(text or "{}")), []
    except DocumentRefused as exc:
        return None, [
            f"Sample context{at}: {m}" for at, messages in exc.fields.items() for m in messages
        ]
    except ValueError as exc:
        return None, [f"Sample context: not valid JSON ({exc})."]


def status_token(agent: Agent, task_id: str, hook: Hook | None, event: str) -> str:
    """The status URL's token: which run, of which agent's hook (to show the right panel)."""
    payload = {"agent": agent.pk, "task": task_id, "hook": hook.key if hook else "", "event": event}
    return signing.dumps(payload, salt=STATUS_SALT)


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def hook_test(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    params = request.POST if request.method == "POST" else request.GET
    hook = _hook(request, agent, params.get("hook", ""))
    event = hook.event if hook else params.get("event", "PostToolUse")
    event = event if event in EVENTS else "PostToolUse"
    if request.method == "GET":
        return _show(request, agent, "panel", **_panel_values(agent, hook, event))
    text = request.POST.get("context", "")
    values = _panel_values(agent, hook, event, text)
    raw, errors = _definition(request, hook)
    context, context_errors = _sample(text)
    errors += context_errors
    if not errors:
        try:
            definition, _ = hook_test_validate(hook_definition=raw, event=event, context=context)
        except ValidationFailed as exc:
            errors += [f"{at or '/'}: {m}" for at, items in exc.fields.items() for m in items]
    if errors:
        return _show(request, agent, "result", 400, errors=errors, **values)
    skipped = hook_test_skip_reason(definition, event, context)
    if skipped:
        return _show(request, agent, "result", outcome={"skipped": skipped}, **values)
    run = hook_test_run_task.delay(
        actor_id=request.user.pk,
        hook_definition=raw,
        event=event,
        context=context,
        agent_id=agent.pk,
        hook_id=hook.pk if hook else None,
    )
    if run.ready():  # tasks run in-process: the result is already here
        return _show(request, agent, "result", outcome=run.get(), **values)
    url = reverse(
        "agents:hook_test_status", args=[agent.slug, status_token(agent, run.id, hook, event)]
    )
    return _show(request, agent, "result", 202, pending={"url": url}, **values)


@role_required(Role.ADMIN)
@require_GET
def hook_test_status(request: HtmxHttpRequest, slug: str, token: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    try:
        signed = signing.loads(token, salt=STATUS_SALT, max_age=STATUS_MAX_AGE_SECONDS)
    except signing.BadSignature:
        raise Http404("No such test run.") from None
    if signed.get("agent") != agent.pk:
        raise Http404("No such test run.")
    run = AsyncResult(str(signed["task"]), app=hook_test_run_task.app)
    hook = _hook(request, agent, str(signed.get("hook", "")))
    event = str(signed.get("event", ""))
    values = _panel_values(agent, hook, event if event in EVENTS else "PostToolUse")
    if not run.ready():
        pending = {"url": request.path}
        return _show(request, agent, "result", 202, pending=pending, **values)
    if not run.successful():
        errors = [f"The test run failed: {run.result!r}"]
        return _show(request, agent, "result", 500, errors=errors, **values)
    return _show(request, agent, "result", outcome=run.result, **values)
