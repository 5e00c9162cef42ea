""" "Test this hook": run one hook definition on a sample context, the way agents run it.

The hook goes through console_client's own runners (`run_command_hook` in the bubblewrap
sandbox, `run_prompt_hook` through the configured LLM judge), so what the admin sees is
what an agent would decide. Runs happen in a Celery task (agents.tasks); in production the
worker that takes the `celery` queue must have bubblewrap (and jq, python3) installed.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from django.db import transaction

from agents.models import Agent, Hook
from agents.validation import EVENTS, Problems, ValidationFailed, validate_hook
from console.actors import Actor
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record
from console_client.context_mapping import sample_context as _sample_context
from console_client.results import HookResult

EXCERPT_CHARS = 4000
CONTEXT_MAX_BYTES = 256 * 1024
SAMPLE_TRANSCRIPT = (
    {"role": "user", "content": "The api service returns 502s. Please fix it."},
    {
        "role": "assistant",
        "content": '{"tool_call": "Bash", "args": {"command": "systemctl restart api"}}',
    },
    {"role": "tool", "content": "api.service restarted", "tool_name": "Bash", "succeeded": True},
    {"role": "assistant", "content": "Restarted the api service; error rate is back to normal."},
)


def sample_context(event: str, agent_name: str) -> dict[str, Any]:
    """The context the portal pre-fills for `event`: the fields a hook of that event receives."""
    return _sample_context(event, agent_name)


def hook_test_validate(
    *, hook_definition: Any, event: Any, context: Any
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The normalized definition and its warnings; ValidationFailed names every bad field."""
    problems = Problems()
    if event not in EVENTS:
        problems.error("/event", f"event must be one of {', '.join(EVENTS)}.")
        raise ValidationFailed(problems, "The hook test is invalid.")
    hook, hook_problems = validate_hook(hook_definition, event=event)
    problems.merge(hook_problems)
    if not isinstance(context, dict):
        problems.error("/context", "The context must be a JSON object.")
    elif len(json.dumps(context)) > CONTEXT_MAX_BYTES:
        problems.error("/context", f"The context is larger than {CONTEXT_MAX_BYTES} bytes.")
    if hook is None or problems.errors:
        raise ValidationFailed(problems, "The hook test is invalid.")
    return hook.definition, problems.warnings


def _excerpt(text: str) -> str:
    if len(text) <= EXCERPT_CHARS:
        return text
    return text[:EXCERPT_CHARS] + f"\n[… {len(text) - EXCERPT_CHARS} more characters]"


def _run(definition: dict[str, Any], context: dict[str, Any], transcript: Path) -> HookResult:
    from console_client.runners import run_command_hook, run_prompt_hook

    if definition["type"] == "command":
        return run_command_hook(definition, context, transcript_path=str(transcript))
    from console_client.llm import LLMConfigurationError, LLMJudge

    try:
        judge = LLMJudge.from_env()
    except LLMConfigurationError as exc:
        blocked = definition.get("failMode") == "block"
        return HookResult(decision="block" if blocked else "allow", error=str(exc))
    return run_prompt_hook(definition, context, llm=judge, transcript_path=str(transcript))


def hook_test_run(
    *,
    actor: Actor | None,
    hook_definition: dict[str, Any],
    event: str,
    context: dict[str, Any],
    agent: Agent | None = None,
    hook: Hook | None = None,
) -> dict[str, Any]:
    """Run the hook once; returns what it decided and what it printed."""
    definition, _warnings = hook_test_validate(
        hook_definition=hook_definition, event=event, context=context
    )
    if definition["type"] == "approval":
        matcher = definition.get("matcher")
        result = HookResult(
            decision="ask",
            reason=f"Matching tools ({matcher!r}) wait for {definition['approvalsRequired']} "
            f"reviewer approval(s), expiring after {definition['expiresIn']} s.",
        )
    else:
        with tempfile.TemporaryDirectory(prefix="hook-test-") as folder:
            transcript = Path(folder) / f"{uuid.uuid4().hex}.jsonl"
            transcript.write_text(
                "".join(json.dumps(line) + "\n" for line in SAMPLE_TRANSCRIPT), encoding="utf-8"
            )
            run_context = {**context, "execution_summary": str(transcript)}
            result = _run(definition, run_context, transcript)
    outcome = {
        "decision": result.decision,
        "reason": result.reason,
        "additional_context": result.additional_context,
        "stdout": _excerpt(result.stdout),
        "stderr": _excerpt(result.stderr),
        "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 1),
        "error": result.error,
    }
    with transaction.atomic():
        governance_event_record(
            actor=actor,
            action=GovernanceAction.HOOK_TESTED,
            agent=agent,
            target=hook,
            summary=f"Tested a {definition['type']} {event} hook: {result.decision}"
            + (f" ({result.error})" if result.error else ""),
            after={
                "event": event,
                "type": definition["type"],
                "decision": result.decision,
                "error": result.error,
                "duration_ms": outcome["duration_ms"],
            },
        )
    return outcome
