"""Per-hook mode in the shared evaluation (`console_client.evaluation`): a shadow hook runs
for real and is recorded as "would have blocked / escalated" but never denies, escalates,
rejects a Stop or adds context; a disabled hook is not run at all."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from agent_hooks import DECLARATION_VERSION

from console_client.evaluation import (
    REASON_BLOCKED,
    REASON_HOOK_TIMEOUT,
    REASON_SHADOW_BLOCK,
    REASON_SHADOW_ESCALATE,
    EventInput,
    EventOutcome,
    evaluate_event,
)
from console_client.interceptors import build_registry, stop_hook_bindings
from console_client.results import HookResult

pytestmark = pytest.mark.asyncio

POINTS = {"PreToolUse": "pre_tool_call", "PostToolUse": "post_tool_call", "Stop": "output"}
KINDS = {"command": "console.command", "prompt": "console.prompt", "approval": "console.approval"}
_sequence = itertools.count(1)


class _Transcript:
    def __init__(self, root: Path) -> None:
        self.path = root / "transcript.jsonl"

    def append(self, role: str, content: str, **extra: Any) -> None:
        pass


class _NoResolver:
    """Fails the test if anything asks reviewers."""

    async def resolve(self, request: Any) -> Any:
        raise AssertionError("a shadow hook must never escalate")


def _document(event: str, *configs: dict[str, Any]) -> dict[str, Any]:
    bindings = [{"id": "console-base", "kind": "console.base", "config": {}}]
    for index, config in enumerate(configs):
        bindings.append(
            {
                "id": f"hk_{index:012x}",
                "kind": KINDS[config.get("type", "prompt")],
                "config": config,
                "at": [POINTS[event]],
            }
        )
    return {
        "declaration": DECLARATION_VERSION,
        "configuration": {
            "mode": "enforce",
            "composition": {"profile": "sequential/run_all"},
            "approval": {"resolver": "console", "redactor": None},
            "posture": {"tool_seam_host_error": "continue"},
        },
        "bindings": bindings,
    }


def _command(event: str, **extra: Any) -> dict[str, Any]:
    matcher = {} if event == "Stop" else {"matcher": "restart_service"}
    return {"type": "command", "command": "true", "failMode": "allow", **matcher, **extra}


async def _evaluate(
    tmp_path: Path, event: str, result: HookResult, *configs: dict[str, Any]
) -> tuple[EventOutcome, list[str]]:
    ran: list[str] = []

    async def runner(hook: dict[str, Any], context: dict[str, Any], **_: Any) -> HookResult:
        ran.append(str(hook.get("mode", "enforce")))
        return result

    registry = build_registry(command_runner=runner, prompt_runner=runner, resolver=_NoResolver())
    outcome = await evaluate_event(
        document=_document(event, *configs),
        registry=registry,
        event=EventInput(
            event=event,
            agent_id="sre-agent",
            agent_name="sre-agent",
            framework="test",
            session_id="s-shadow",
            sequence=next(_sequence),
            tool_name="" if event == "Stop" else "restart_service",
            tool_call_id="" if event == "Stop" else "c1",
            tool_input={} if event == "Stop" else {"service": "api"},
            tool_result=None if event != "PostToolUse" else "ok",
            final_output="done" if event == "Stop" else "",
        ),
        transcript=_Transcript(tmp_path),
    )
    return outcome, ran


def _reasons(outcome: EventOutcome) -> list[str | None]:
    return [summary.reason for summary in outcome.record.verdicts if summary.name != "console-base"]


async def test_an_enforced_blocking_hook_denies(tmp_path):
    outcome, ran = await _evaluate(
        tmp_path, "PreToolUse", HookResult("block", "no"), _command("PreToolUse")
    )
    assert outcome.denied and ran == ["enforce"]
    assert _reasons(outcome) == [REASON_BLOCKED]


async def test_a_shadow_blocking_hook_runs_but_only_records_would_block(tmp_path):
    config = _command("PreToolUse", mode="shadow")
    outcome, ran = await _evaluate(tmp_path, "PreToolUse", HookResult("block", "no"), config)
    assert ran == ["shadow"]
    assert not outcome.denied and outcome.record.verdict.decision.permits
    assert _reasons(outcome) == [REASON_SHADOW_BLOCK]


async def test_a_shadow_hook_that_asks_never_escalates(tmp_path):
    config = _command("PreToolUse", mode="shadow")
    outcome, _ = await _evaluate(tmp_path, "PreToolUse", HookResult("ask", "check"), config)
    assert not outcome.denied and not outcome.approved
    assert _reasons(outcome) == [REASON_SHADOW_ESCALATE]


async def test_a_shadow_approval_hook_never_escalates(tmp_path):
    config = {"type": "approval", "matcher": "restart_service", "mode": "shadow"}
    outcome, _ = await _evaluate(tmp_path, "PreToolUse", HookResult("allow"), config)
    assert not outcome.denied
    assert _reasons(outcome) == [REASON_SHADOW_ESCALATE]


async def test_a_shadow_hook_adds_no_context(tmp_path):
    result = HookResult("allow", additional_context="[AUDIT] seen")
    shadow, _ = await _evaluate(
        tmp_path, "PostToolUse", result, _command("PostToolUse", mode="shadow")
    )
    enforced, _ = await _evaluate(tmp_path, "PostToolUse", result, _command("PostToolUse"))
    assert shadow.additional_context is None
    assert enforced.additional_context == "[AUDIT] seen"


async def test_a_shadow_stop_rejection_does_not_make_the_agent_continue(tmp_path):
    config = _command("Stop", mode="shadow")
    outcome, _ = await _evaluate(tmp_path, "Stop", HookResult("block", "say done"), config)
    assert outcome.stop_reasons == []
    assert _reasons(outcome) == [REASON_SHADOW_BLOCK]


async def test_a_disabled_hook_is_not_run(tmp_path):
    config = _command("PreToolUse", enabled=False)
    outcome, ran = await _evaluate(tmp_path, "PreToolUse", HookResult("block", "no"), config)
    assert ran == [] and not outcome.denied


async def test_a_hook_timeout_is_recorded_as_a_timeout(tmp_path):
    result = HookResult("allow", error="timed out after 1 s", timed_out=True)
    outcome, _ = await _evaluate(tmp_path, "PreToolUse", result, _command("PreToolUse"))
    assert not outcome.denied
    assert _reasons(outcome) == [REASON_HOOK_TIMEOUT]


async def test_shadow_stop_hooks_cannot_make_the_agent_continue():
    document = _document("Stop", _command("Stop", mode="shadow"), _command("Stop"))
    assert stop_hook_bindings(document) == (1, 0)
