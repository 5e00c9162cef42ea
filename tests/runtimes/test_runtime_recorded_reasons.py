""" "Record its reason" on the console's server-side runtime hooks: the evaluation the console
runs itself keeps the words of a hook opted in and of no other (the same rule as the agent
side, console_client.reasons)."""

from __future__ import annotations

from audit.models import InterceptionRecord
from tests.runtimes.runtime_support import BLOCK_RM_RF, CLAUDE_PRE, add_hook, payload, post_hook

RM = {"command": "rm -rf /home/dev/project/build", "description": "Clean the build"}


def _blocked_record(client, sre) -> InterceptionRecord:
    response = post_hook(client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=RM))
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    return InterceptionRecord.objects.get(agent=sre.agent)


def test_an_opted_in_hook_has_its_reason_recorded(client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm", "recordReason": True})
    record = _blocked_record(client, sre)
    assert record.decided_hook == hook.key
    [(key, text)] = record.recorded_reasons
    assert key == hook.key and "rm -rf" in text
    assert record.raw["verdict"]["message"] == text


def test_a_hook_not_opted_in_records_no_reason(client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm"})
    record = _blocked_record(client, sre)
    assert record.decided_hook == hook.key
    assert record.recorded_reasons == []
    assert "message" not in record.raw["verdict"]
