"""Review before apply: the YAML editor, the import and a rollback first show what they will
change (agents.config_diff against the scope's current revision) and apply only when the
admin confirms that preview. The confirmation carries the base revision it was made on; if
the scope moved meanwhile nothing is applied and the new difference is shown instead.

Every step is a plain POST (a preview page with Confirm/Cancel buttons); with htmx the same
responses are swapped in place as partials.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents import selectors, services
from agents.config_review import (
    BaseRevisionMoved,
    Preview,
    document_preview,
    rollback_preview,
)
from agents.forms import DocumentForm, YamlForm
from agents.models import Agent, ConfigRevision
from agents.validation import ValidationFailed
from agents.views import (
    GET_POST,
    HtmxHttpRequest,
    _agent_page,
    _custom_agent_for,
    _custom_page,
    _go,
    _render,
    _scope_url,
    _warned,
    admin_required,
)
from console.actors import request_actor
from console.api import yaml_dump

NOTHING_TO_APPLY = "Nothing to apply: this is the current configuration."


def _step(request: HtmxHttpRequest) -> str:
    """`confirm` only with a base revision to check; anything else previews first."""
    step = request.POST.get("step", "")
    if step == "confirm" and _base(request) is None:
        return "preview"
    return step if step in ("confirm", "cancel") else "preview"


def _base(request: HtmxHttpRequest) -> int | None:
    value = request.POST.get("base_revision", "")
    return int(value) if value.isdigit() else None


def _moved_text(exc: BaseRevisionMoved) -> str:
    return (
        f"Nothing was applied: the configuration changed since your preview (revision "
        f"{exc.base} → {exc.current}). Review what would change now and confirm again."
    )


def _review(
    request: HtmxHttpRequest,
    context: dict[str, Any],
    preview: Preview,
    *,
    action: str,
    title: str,
    text: str = "",
    moved: str = "",
) -> HttpResponse:
    context.update(preview=preview, action=action, title=title, text=text, moved=moved)
    return _render(request, "agents/review.html", "review", context)


def _applied(
    request: HtmxHttpRequest, url: str, message: str, warnings: dict[str, list[str]]
) -> HttpResponse:
    if warnings:
        messages.warning(request, f"Warnings: {_warned(warnings)}")
    return _go(request, url, message)


def _document_step(
    request: HtmxHttpRequest, form: DocumentForm, agent: Agent, name: str
) -> tuple[Preview | None, str, Any]:
    """Preview or apply a valid document form; returns (preview, moved message, saved)."""
    data = form.cleaned_data
    if _step(request) == "confirm":
        try:
            saved = services.custom_agent_put(
                actor=request_actor(request),
                agent=agent,
                name=name,
                document=data["document"],
                base_revision=_base(request),
            )
            return None, "", saved
        except BaseRevisionMoved as exc:
            moved = _moved_text(exc)
        except ValidationFailed as exc:
            form.add_problems(exc)
            return None, "", None
    else:
        moved = ""
    try:
        return document_preview(agent, name, data["document"]), moved, None
    except ValidationFailed as exc:
        form.add_problems(exc)
        return None, "", None


@admin_required
@GET_POST
def custom_agent_yaml(request: HtmxHttpRequest, slug: str, name: str) -> HttpResponse:
    custom_agent = _custom_agent_for(request, slug, name)
    agent = custom_agent.agent
    text = yaml_dump(selectors.custom_agent_as_document(custom_agent))
    form = YamlForm(request.POST or None, initial={"text": text})
    context = _agent_page(agent, "custom", custom_agent=custom_agent, subtab="yaml", form=form)
    if request.method == "POST" and _step(request) != "cancel" and form.is_valid():
        preview, moved, saved = _document_step(request, form, agent, name)
        if saved:
            text = f"Saved the document of {name}."
            return _applied(request, request.path, text, saved[2])
        if preview and preview.diff.is_empty:
            context["notice"] = NOTHING_TO_APPLY
        elif preview:
            title = f"Review the change to custom agent {name}"
            source = form.cleaned_data["source"]
            return _review(
                request,
                context,
                preview,
                action=request.path,
                title=title,
                text=source,
                moved=moved,
            )
    return _render(request, "agents/custom_yaml.html", "yaml-form", context)


@admin_required
@require_POST
def custom_agent_import(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    form = DocumentForm(request.POST, request.FILES)
    context = _custom_page(request, agent, import_form=form)
    if _step(request) != "cancel" and form.is_valid():
        name = form.cleaned_data["name"]
        preview, moved, saved = _document_step(request, form, agent, name)
        if saved:
            custom_agent, created, warnings = saved
            verb = "Imported new" if created else "Replaced"
            url = _scope_url(agent, custom_agent)
            return _applied(request, url, f"{verb} custom agent {custom_agent.name}.", warnings)
        if preview and preview.diff.is_empty:
            context["import_notice"] = NOTHING_TO_APPLY
        elif preview:
            verb = "Create" if preview.diff.created else "Replace"
            source = form.cleaned_data["source"]
            action = reverse("agents:custom_import", args=[slug])
            title = f"Review the import: {verb.lower()} custom agent {name}"
            return _review(
                request, context, preview, action=action, title=title, text=source, moved=moved
            )
    return _render(request, "agents/custom_agents.html", "import-form", context)


def _history_url(revision: ConfigRevision) -> str:
    slug, name = revision.agent.slug, revision.custom_agent_name
    if name:
        return reverse("agents:custom_history", args=[slug, name])
    return reverse("agents:history", args=[slug])


@admin_required
@require_POST
def revision_rollback(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    agent = selectors.get_agent_for_user(request.user, slug, write=True)
    revision = selectors.get_revision(agent, number)
    url, step = _history_url(revision), _step(request)
    name = revision.custom_agent_name
    if step == "cancel":
        if request.htmx:
            previous, lines = selectors.revision_diff(revision)
            context = {"agent": agent, "revision": revision, "previous": previous}
            return render(request, "agents/revision.html#diff", {**context, "lines": lines})
        return _go(request, url, "Rollback cancelled; nothing changed.", messages.INFO)
    moved = ""
    try:
        if step == "confirm":
            restored = services.revision_rollback(
                actor=request_actor(request), revision=revision, base_revision=_base(request)
            )
            text = f"Rolled back to revision {number} (recorded as revision {restored.number})."
            return _go(request, url, text)
    except BaseRevisionMoved as exc:
        moved = _moved_text(exc)
    except ValidationFailed as exc:
        return _go(request, url, f"Cannot roll back: {_warned(exc.fields)}", messages.ERROR)
    try:
        preview = rollback_preview(revision)
    except ValidationFailed as exc:
        return _go(request, url, f"Cannot roll back: {_warned(exc.fields)}", messages.ERROR)
    if preview.diff.is_empty:
        return _go(request, url, f"{NOTHING_TO_APPLY} (r{number})", messages.INFO)
    custom_agent = selectors.find_custom_agent(agent, name)
    tab = "custom" if name else "history"
    context = _agent_page(
        agent, tab, custom_agent=custom_agent, scope_name=name, revision=revision, subtab="history"
    )
    action = reverse("agents:revision_rollback", args=[slug, number])
    scope = f"custom agent {name}" if name else "the agent level"
    title = f"Review the rollback of {scope} to revision {number}"
    return _review(request, context, preview, action=action, title=title, moved=moved)
