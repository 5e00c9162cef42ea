"""Saved sample contexts of a hook ("Test this hook"): each a name, a hook context and the
verdict it should give. Writes are services (governance row in the same transaction); the
suite run itself is agents.hook_testing.hook_test_suite_run."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.http import Http404

from agents.hook_testing import CONTEXT_MAX_BYTES
from agents.models import Hook, HookSample, SampleVerdict
from agents.validation import Problems
from console.actors import Actor
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record

NAME_MAX = 80
SAMPLES_MAX = 25


def hook_samples(hook: Hook) -> list[HookSample]:
    return list(HookSample.objects.filter(hook=hook).order_by("name"))


def get_hook_sample(hook: Hook, pk: int) -> HookSample:
    """Sample `pk` of `hook` (the caller got the hook through its access helper); else 404."""
    sample = HookSample.objects.filter(hook=hook, pk=pk).first()
    if sample is None:
        raise Http404("No such sample.")
    return sample


def _check(hook: Hook, name: str, context: Any, expected: str) -> Problems:
    problems = Problems()
    if not name:
        problems.error("/name", "Name the sample.")
    elif len(name) > NAME_MAX:
        problems.error("/name", f"At most {NAME_MAX} characters.")
    if expected not in SampleVerdict.values:
        choices = ", ".join(SampleVerdict.values)
        problems.error("/expected", f"Expected verdict must be one of {choices}.")
    if not isinstance(context, dict):
        problems.error("/context", "The sample context must be a JSON object.")
    elif len(json.dumps(context)) > CONTEXT_MAX_BYTES:
        problems.error("/context", f"The sample context is larger than {CONTEXT_MAX_BYTES} bytes.")
    others = HookSample.objects.filter(hook=hook).exclude(name=name).count()
    if others >= SAMPLES_MAX:
        problems.error("/name", f"A hook keeps at most {SAMPLES_MAX} samples; delete one first.")
    return problems


@transaction.atomic
def hook_sample_save(
    *, actor: Actor | None, hook: Hook, name: str, context: Any, expected: str
) -> tuple[HookSample, bool]:
    """Create sample `name` of `hook`, or replace the one of that name; (sample, created)."""
    name = name.strip()
    problems = _check(hook, name, context, expected)
    if problems.errors:
        raise problems.refusal("The sample is invalid.")
    sample, created = HookSample.objects.select_for_update().update_or_create(
        hook=hook, name=name, defaults={"context": context, "expected": expected}
    )
    governance_event_record(
        actor=actor,
        action=GovernanceAction.HOOK_SAMPLE_SAVED,
        agent=hook.agent,
        target=hook,
        summary=f"{'Saved' if created else 'Replaced'} sample {name!r} of hook {hook.key} "
        f"(expects {expected})",
        after={"name": name, "expected": expected, "context": context},
    )
    return sample, created


@transaction.atomic
def hook_sample_delete(*, actor: Actor | None, sample: HookSample) -> None:
    hook = sample.hook
    governance_event_record(
        actor=actor,
        action=GovernanceAction.HOOK_SAMPLE_DELETED,
        agent=hook.agent,
        target=hook,
        summary=f"Deleted sample {sample.name!r} of hook {hook.key}",
        before={"name": sample.name, "expected": sample.expected, "context": sample.context},
    )
    sample.delete()
