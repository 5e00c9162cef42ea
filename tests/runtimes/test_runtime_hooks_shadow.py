"""Per-hook mode on the console's server-side runtime hooks (Claude Code's endpoint): the
same shared evaluation as the agent side, so a shadow hook is run and recorded as "would
have blocked" without blocking or adding context, and a disabled hook does not run."""

from __future__ import annotations

from agents import services as agent_services
from audit.models import InterceptionRecord
from tests.runtimes.runtime_support import (
    AUDIT_CONTEXT,
    BLOCK_RM_RF,
    CLAUDE_POST,
    CLAUDE_PRE,
    add_hook,
    payload,
    post_hook,
)

RM = {"command": "rm -rf /home/dev/project/build", "description": "Clean the build"}


def _summary(record: InterceptionRecord, key: str) -> dict:
    return next(v for v in record.raw["verdicts"] if v.get("name") == key)


def test_a_shadow_hook_that_would_block_lets_the_call_through_and_says_so(client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf", "mode": "shadow"})
    response = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    assert response.status_code == 200 and response.json() == {}
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert record.outcome == "warned" and record.decision == "allow"
    assert record.hook_ids == ["console-base", hook.key]
    assert _summary(record, hook.key)["reason"] == "console:shadow_would_block"


def test_the_same_hook_enforced_blocks(client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    response = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert _summary(record, hook.key)["reason"] == "console:hook_blocked"


def test_a_shadow_hook_adds_no_context(client, sre):
    add_hook(sre, "PostToolUse", {**AUDIT_CONTEXT, "mode": "shadow"})
    response = post_hook(client, sre, "claude-code", CLAUDE_POST)
    assert response.status_code == 200
    assert "additionalContext" not in str(response.json())


def test_a_disabled_hook_does_not_run(client, sre):
    hook = add_hook(sre, "PreToolUse", BLOCK_RM_RF)
    agent_services.hook_set_enabled(actor=None, hook=hook, enabled=False)
    response = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    assert response.json() == {}
    record = InterceptionRecord.objects.get(agent=sre.agent)
    assert hook.key not in record.hook_ids
