"""The health strip of the agent level and of a custom agent: problems with one scope's hooks
an admin should know now. Read-only, from the stored hooks (checked again by today's rules),
the console's LLM judge configuration and the notes of apps above agents
(agents/extensions.py `hook_notes`: the audit app's last hook error of each hook).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.extensions import HookNote, hook_notes
from agents.models import Agent, CustomAgent, Hook
from agents.selectors import hook_rows
from agents.validation import FAIL_MODE_DEFAULT, validate_hook
from console_client.llm import LLMJudge

# What a hook error does, by failMode and event (a prompt hook without a judge always errs).
_ON_ERROR = {
    ("allow", "Stop"): "fails open: the final answer is returned unchecked",
    ("allow", "PostToolUse"): "fails open: tool results pass unchecked",
    ("allow", "PreToolUse"): "fails open: tool calls run unchecked",
    ("block", "Stop"): "fails closed: every final answer is rejected (up to maxRejections)",
    ("block", "PostToolUse"): "fails closed: every matching tool result is blocked",
    ("block", "PreToolUse"): "fails closed: every matching tool call is blocked",
}


@dataclass(frozen=True)
class HealthItem:
    level: str  # "error" (something is blocked or broken) or "warning"
    hook: Hook
    message: str
    record_id: int | None = None  # the interception record that shows it

    @property
    def label(self) -> str:
        return hook_label(self.hook)


def hook_label(hook: Hook) -> str:
    return hook.name or f"{hook.event} hook #{hook.position + 1}"


def _stored_problems(hook: Hook) -> list[HealthItem]:
    """What today's validation says about the stored hook: refusals and no-effect fields."""
    _parsed, problems = validate_hook(
        {**hook.definition, "enabled": hook.enabled}, event=hook.event
    )
    items = [
        HealthItem("error", hook, f"No longer valid: {message}")
        for messages in problems.errors.values()
        for message in messages
    ]
    for messages in problems.warnings.values():
        for message in messages:
            if "matches no tool" in message:
                message = f"Never runs: {message[:1].lower()}{message[1:]}"
            items.append(HealthItem("warning", hook, message))
    return items


def _judge_problem(hook: Hook, problem: str) -> HealthItem:
    fail_mode = str(hook.definition.get("failMode", FAIL_MODE_DEFAULT))
    effect = _ON_ERROR.get((fail_mode, hook.event), f"failMode {fail_mode} decides")
    return HealthItem(
        "error" if fail_mode == "block" else "warning",
        hook,
        f"No LLM endpoint is configured ({problem}): this prompt hook errs on every run the "
        f"console evaluates (other runtimes, Test this hook), and with failMode {fail_mode} it "
        f"{effect}. Agents that run hooks themselves use their own CONSOLE_LLM_* settings.",
    )


def scope_health(agent: Agent, custom_agent: CustomAgent | None) -> list[HealthItem]:
    """Problems of the scope's hooks, errors first, each list in hook order."""
    hooks = hook_rows(agent, custom_agent)
    judge_problem = LLMJudge().configuration_error
    notes: dict[str, list[HookNote]] = {}
    for provided in hook_notes(agent, [hook.key for hook in hooks if hook.enabled]):
        for note in provided:
            notes.setdefault(note.key, []).append(note)
    items: list[HealthItem] = []
    for hook in hooks:
        items += _stored_problems(hook)
        if hook.enabled and hook.hook_type == "prompt" and judge_problem:
            items.append(_judge_problem(hook, judge_problem))
        for note in notes.get(hook.key, []):
            items.append(HealthItem("warning", hook, note.message, note.record_id))
    return sorted(items, key=lambda item: item.level != "error")


def health_context(agent: Agent, custom_agent: CustomAgent | None) -> dict[str, Any]:
    """What templates/agents/_health.html shows."""
    items = scope_health(agent, custom_agent)
    return {"health": items, "health_errors": sum(item.level == "error" for item in items)}
