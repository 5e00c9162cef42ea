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

from celery.backends.base import DisabledBackend
from celery.result import AsyncResult
from django.contrib import messages
from django.core import signing
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import hook_samples as hook_samples_service
from agents import selectors
from agents.forms import HookForm
from agents.hook_samples import get_hook_sample, hook_samples
from agents.hook_testing import hook_test_skip_reason, hook_test_validate, sample_context
from agents.models import Agent, Hook, SampleVerdict
from agents.tasks import hook_test_run_task, hook_test_suite_task
from agents.validation import EVENTS
from agents.views import _agent_page
from console.actors import request_actor
from console.errors import InvalidInput
from console.parsers import ensure_storable, json_loads
from console.roles import Role
from console.web import HtmxHttpRequest, is_partial_request, render_page, role_required

PAGE = "agents/hook_test.html"
STATUS_SALT = "agents.hook_test_status"
# A status link outlives any run: the hook's timeout is at most 300 s.
STATUS_MAX_AGE_SECONDS = 3600
SAMPLE_FIELDS = {
    "/name": "Sample name",
    "/expected": "Expected verdict",
    "/context": "Sample context",
}


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
        "samples": hook_samples(hook) if hook else [],
        "verdicts": SampleVerdict.choices,
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
    except InvalidInput as exc:
        return None, [
            f"Sample context at {at or '/'}: {m}"
            for at, messages in exc.fields.items()
            for m in messages
        ]
    except ValueError as exc:
        return None, [f"Sample context: not valid JSON ({exc})."]


def status_token(agent: Agent, task_id: str, hook: Hook | None, event: str) -> str:
    """The status URL's token: which run, of which agent's hook (to show the right panel)."""
    payload = {"agent": agent.pk, "task": task_id, "hook": hook.key if hook else "", "event": event}
    return signing.dumps(payload, salt=STATUS_SALT)


def _started(
    request: HtmxHttpRequest, agent: Agent, run: AsyncResult, values: dict[str, Any]
) -> HttpResponse:
    if run.ready():  # tasks run in-process: the result is already here
        return _show(request, agent, "result", outcome=run.get(), **values)
    token = status_token(agent, run.id, values["hook"], values["event"])
    url = reverse("agents:hook_test_status", args=[agent.slug, token])
    return _show(request, agent, "result", 202, pending={"url": url}, **values)


def _problems(exc: InvalidInput) -> list[str]:
    return [f"{at or '/'}: {m}" for at, items in exc.fields.items() for m in items]


def _suite(request: HtmxHttpRequest, agent: Agent, values: dict[str, Any]) -> HttpResponse:
    """Re-run the hook's saved samples on the definition in the editor."""
    hook, event = values["hook"], values["event"]
    raw, errors = _definition(request, hook)
    if hook is None:
        errors.append("Samples belong to a saved hook: save the hook first.")
    elif not values["samples"]:
        errors.append("This hook has no saved samples yet.")
    if not errors:
        try:
            hook_test_validate(hook_definition=raw, event=event, context={})
        except InvalidInput as exc:
            errors += _problems(exc)
    if errors:
        return _show(request, agent, "result", 400, errors=errors, **values)
    run = hook_test_suite_task.delay(
        actor_id=request.user.pk, hook_definition=raw, event=event, hook_id=hook.pk
    )
    return _started(request, agent, run, values)


@role_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def hook_test(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    params = request.POST if request.method == "POST" else request.GET
    hook = _hook(request, agent, params.get("hook", ""))
    event = hook.event if hook else params.get("event", "PostToolUse")
    event = event if event in EVENTS else "PostToolUse"
    if request.method == "GET":
        text = ""
        if hook and request.GET.get("sample", "").isdigit():
            chosen = get_hook_sample(hook, int(request.GET["sample"]))
            text = json.dumps(chosen.context, indent=2)
        return _show(request, agent, "panel", **_panel_values(agent, hook, event, text))
    text = request.POST.get("context", "")
    values = _panel_values(agent, hook, event, text)
    if request.POST.get("suite"):
        return _suite(request, agent, values)
    raw, errors = _definition(request, hook)
    context, context_errors = _sample(text)
    errors += context_errors
    if not errors:
        try:
            definition, _ = hook_test_validate(hook_definition=raw, event=event, context=context)
        except InvalidInput as exc:
            errors += _problems(exc)
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
    return _started(request, agent, run, values)


@role_required(Role.ADMIN)
@require_POST
def hook_sample_save(request: HtmxHttpRequest, slug: str, key: str) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    text = request.POST.get("context", "")
    values = _panel_values(hook.agent, hook, hook.event, text)
    context, errors = _sample(text)
    if not errors:
        try:
            sample, created = hook_samples_service.hook_sample_save(
                actor=request_actor(request),
                hook=hook,
                name=request.POST.get("sample_name", ""),
                context=context,
                expected=request.POST.get("expected", ""),
            )
        except InvalidInput as exc:
            errors = [
                f"{SAMPLE_FIELDS.get(at, at)}: {m}" for at, ms in exc.fields.items() for m in ms
            ]
    if errors:
        return _show(request, hook.agent, "panel", 400, sample_errors=errors, **values)
    note = f"{'Saved' if created else 'Replaced'} sample {sample.name}."
    if is_partial_request(request):
        values["samples"] = hook_samples(hook)
        return _show(request, hook.agent, "panel", sample_note=note, **values)
    messages.success(request, note)
    return redirect(f"{reverse('agents:hook_test', args=[slug])}?hook={hook.key}")


@role_required(Role.ADMIN)
@require_POST
def hook_sample_delete(request: HtmxHttpRequest, slug: str, key: str, pk: int) -> HttpResponse:
    hook = selectors.get_hook_for_user(request.user, slug, key)
    sample = get_hook_sample(hook, pk)
    hook_samples_service.hook_sample_delete(actor=request_actor(request), sample=sample)
    note = f"Deleted sample {sample.name}."
    if is_partial_request(request):
        values = _panel_values(hook.agent, hook, hook.event, request.POST.get("context", ""))
        return _show(request, hook.agent, "panel", sample_note=note, **values)
    messages.success(request, note)
    return redirect(f"{reverse('agents:hook_test', args=[slug])}?hook={hook.key}")


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
    if isinstance(run.backend, DisabledBackend):
        # No result store (the embedded default runs tasks in-process and never polls): a
        # status link from another configuration has nothing to show.
        raise Http404("This console keeps no task results; run the test again.")
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
