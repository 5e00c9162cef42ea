"""Celery tasks of the agents app.

`hook_test_run_task` runs "Test this hook" (agents.hook_testing). On the embedded default
it runs in-process; with REDIS_URL a worker runs it, and that worker's machine must have
bubblewrap (plus jq and python3) for command hooks, and the CONSOLE_LLM_* variables for
prompt hooks. The portal does not wait: it polls the result (CELERY_RESULT_BACKEND).
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model

from agents.hook_testing import hook_test_run, hook_test_suite_run
from agents.models import Agent, Hook, HookSample


@shared_task(name="agents.tasks.hook_test_run_task")
def hook_test_run_task(
    *,
    actor_id: int | None,
    hook_definition: dict[str, Any],
    event: str,
    context: dict[str, Any],
    agent_id: int | None = None,
    hook_id: int | None = None,
) -> dict[str, Any]:
    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
    hook = Hook.objects.filter(pk=hook_id).first() if hook_id else None
    return hook_test_run(
        actor=actor,
        hook_definition=hook_definition,
        event=event,
        context=context,
        agent=agent,
        hook=hook,
    )


@shared_task(name="agents.tasks.hook_test_suite_task")
def hook_test_suite_task(
    *,
    actor_id: int | None,
    hook_definition: dict[str, Any],
    event: str,
    hook_id: int,
) -> dict[str, Any]:
    """Re-run a hook's saved samples on a (possibly unsaved) definition of it."""
    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    hook = Hook.objects.select_related("agent").get(pk=hook_id)
    samples = [
        {"name": s.name, "context": s.context, "expected": s.expected}
        for s in HookSample.objects.filter(hook=hook).order_by("name")
    ]
    return hook_test_suite_run(
        actor=actor,
        hook_definition=hook_definition,
        event=event,
        samples=samples,
        agent=hook.agent,
        hook=hook,
    )
