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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_hooks import Decision
from django.db import transaction

from agents.models import Agent, Hook, HookMode, SampleVerdict
from agents.validation import (
    EVENTS,
    FAIL_MODE_DEFAULT,
    MATCHER_EVENTS,
    Problems,
    validate_hook,
)
from console.actors import Actor
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record
from console_client.context_mapping import matcher_matches
from console_client.context_mapping import sample_context as _sample_context
from console_client.evaluation import (
    MAX_REJECTIONS_DEFAULT,
    REASON_ASKED,
    REASON_STOP_REJECTED,
    SessionState,
    hook_applies,
    result_verdict,
)
from console_client.results import HookResult

EXCERPT_CHARS = 4000
LLM_MISSING = "No LLM endpoint is configured"
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


def hook_test_skip_reason(definition: dict[str, Any], event: str, context: dict[str, Any]) -> str:
    """Why the hook would not run on this hook context ("" if it would), decided by the same
    rules the agents apply (console_client.evaluation)."""
    tool = str(context.get("tool_name", ""))
    # The rules read the agent-side event context; the sample is the hook's own context.
    event_view = {
        "tool_call": {"name": tool},
        "tool_result": {"is_error": context.get("tool_succeeded") is False},
    }
    if event in MATCHER_EVENTS:
        if not matcher_matches(definition.get("matcher"), tool):
            return (
                f"This hook would not run for tool {tool!r}: its matcher "
                f"{definition.get('matcher')!r} does not match it."
            )
        if not hook_applies(definition, event, event_view):
            return "This hook would not run: PostToolUse hooks run only after a tool succeeded."
    if event == "Stop" and definition["type"] == "prompt":
        bound = int(definition.get("maxRejections", MAX_REJECTIONS_DEFAULT))
        count = context.get("stop_rejection_count")
        if isinstance(count, int) and count >= bound:
            return (
                f"This hook would not run: the agent was already sent back {count} time(s), "
                f"and prompt Stop hooks stop after maxRejections ({bound})."
            )
    return ""


def hook_test_validate(
    *, hook_definition: Any, event: Any, context: Any
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The normalized definition and its warnings; InvalidInput names every bad field."""
    problems = Problems()
    if event not in EVENTS:
        problems.error("/event", f"event must be one of {', '.join(EVENTS)}.")
        raise problems.refusal("The hook test is invalid.")
    hook, hook_problems = validate_hook(hook_definition, event=event)
    problems.merge(hook_problems)
    if not isinstance(context, dict):
        problems.error("/context", "The context must be a JSON object.")
    elif len(json.dumps(context)) > CONTEXT_MAX_BYTES:
        problems.error("/context", f"The context is larger than {CONTEXT_MAX_BYTES} bytes.")
    if hook is None or problems.errors:
        raise problems.refusal("The hook test is invalid.")
    # The mode rides along: a shadow hook runs for real, but its verdict only gets recorded.
    return {**hook.definition, "mode": hook.mode}, problems.warnings


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
        error = f"{LLM_MISSING}: {exc}"
        return HookResult(decision="block" if blocked else "allow", error=error)
    return run_prompt_hook(definition, context, llm=judge, transcript_path=str(transcript))


def _error_kind(error: str | None) -> str:
    """How the panel names a hook error: a timeout, a missing LLM endpoint, or any other."""
    if not error:
        return ""
    if error.startswith(LLM_MISSING):
        return "no_llm"
    if "timed out" in error or "did not answer within" in error:
        return "timeout"
    return "error"


@dataclass(frozen=True)
class _FixedTranscript:
    """The sample transcript a test run reads; nothing is appended to it."""

    path: Path

    def append(self, role: str, content: str, **extra: Any) -> None:
        return None


def _agent_effect(event: str, context: dict[str, Any], result: HookResult) -> tuple[str, str]:
    """What an agent does with `result` (the verdict and a sentence), by the rules the
    agents apply (console_client.evaluation.result_verdict)."""
    state = SessionState(
        session_id="hook-test",
        agent_name=str(context.get("agent_name", "")),
        transcript=_FixedTranscript(Path(str(context.get("execution_summary", "")))),
    )
    call = {"tool_call": {"id": "hook-test", "name": str(context.get("tool_name", ""))}}
    verdict = result_verdict(key="this hook", event=event, result=result, state=state, context=call)
    reasons = {warning.reason for warning in verdict.warnings}
    if verdict.decision == Decision.DENY and verdict.reason == REASON_ASKED:
        return "ask", "An agent would hold the call until a reviewer approves it."
    if verdict.decision == Decision.DENY:
        what = (
            "not make the call"
            if event == "PreToolUse"
            else "keep the tool's result from the model"
        )
        return "block", f"An agent would {what}: {verdict.message}"
    if REASON_STOP_REJECTED in reasons:
        return "block", f"The agent would be sent back to continue: {state.stop_rejections[0]}"
    if state.pending_context:
        return "allow", "The call goes on, and the additional context joins the next request."
    if event == "Stop":
        # A rejection without a reason already came back as allow: it counts as approval.
        return "allow", "The agent may stop."
    return "allow", "An agent would let this go on."


def _execute(definition: dict[str, Any], event: str, context: dict[str, Any]) -> dict[str, Any]:
    """One run of a validated definition: {"skipped": why} or what it decided and printed."""
    skipped = hook_test_skip_reason(definition, event, context)
    if skipped:
        return {"skipped": skipped}
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
    if result.error:
        verdict, effect = "error", ""
    elif definition["type"] == "approval":
        verdict, effect = "ask", "Matching calls wait for a reviewer's approval."
    else:
        verdict, effect = _agent_effect(event, context, result)
    if definition.get("mode") == HookMode.SHADOW and verdict in ("block", "ask"):
        would = "blocked" if verdict == "block" else "escalated"
        effect = (
            f"Shadow mode: nothing is blocked or held; the agent records that this hook "
            f"would have {would}, and the call goes on. (Enforced: {effect})"
        )
    return {
        "verdict": verdict,
        "effect": effect,
        "decision": result.decision,
        "reason": result.reason,
        "additional_context": result.additional_context,
        "stdout": _excerpt(result.stdout),
        "stderr": _excerpt(result.stderr),
        "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 1),
        "error": result.error,
        "error_kind": _error_kind(result.error),
        "fail_mode": definition.get("failMode", FAIL_MODE_DEFAULT),
    }


def outcome_verdict(outcome: dict[str, Any]) -> str:
    """The outcome as a SampleVerdict value, or "error" (which no sample expects)."""
    if outcome.get("skipped"):
        return SampleVerdict.NOT_RUN.value
    return str(outcome["verdict"])


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
    outcome = _execute(definition, event, context)
    if outcome.get("skipped"):
        return outcome
    with transaction.atomic():
        governance_event_record(
            actor=actor,
            action=GovernanceAction.HOOK_TESTED,
            agent=agent,
            target=hook,
            summary=f"Tested a {definition['type']} {event} hook: {outcome['decision']}"
            + (f" ({outcome['error']})" if outcome["error"] else ""),
            after={
                "event": event,
                "type": definition["type"],
                "decision": outcome["decision"],
                "error": outcome["error"],
                "duration_ms": outcome["duration_ms"],
            },
        )
    return outcome


def hook_test_suite_run(
    *,
    actor: Actor | None,
    hook_definition: dict[str, Any],
    event: str,
    samples: list[dict[str, Any]],
    agent: Agent | None = None,
    hook: Hook | None = None,
) -> dict[str, Any]:
    """Run the definition on each saved sample ({name, context, expected}); says per sample
    whether it still gives the expected verdict."""
    rows = []
    definition: dict[str, Any] = {}
    for sample in samples:
        definition, _warnings = hook_test_validate(
            hook_definition=hook_definition, event=event, context=sample["context"]
        )
        outcome = _execute(definition, event, sample["context"])
        got = outcome_verdict(outcome)
        rows.append(
            {
                "name": sample["name"],
                "expected": sample["expected"],
                "got": got,
                "passed": got == sample["expected"],
                "detail": outcome.get("skipped") or outcome.get("error") or outcome["reason"],
            }
        )
    passed = sum(1 for row in rows if row["passed"])
    with transaction.atomic():
        governance_event_record(
            actor=actor,
            action=GovernanceAction.HOOK_TESTED,
            agent=agent,
            target=hook,
            summary=f"Ran {len(rows)} saved sample(s) of a {event} hook: {passed} as expected",
            after={"event": event, "type": definition.get("type"), "samples": rows},
        )
    return {"suite": rows, "passed": passed, "failed": len(rows) - passed, "total": len(rows)}
