"""Parsing hook answers: the simple and extended forms, and everything that is refused."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from console_client.hook_output import (
    HookOutput,
    HookOutputError,
    parse_hook_output,
    strip_fence,
)


def test_simple_ok_true_allows() -> None:
    assert parse_hook_output('{"ok": true}') == HookOutput("allow")


def test_simple_ok_false_blocks_with_the_reason() -> None:
    parsed = parse_hook_output('{"ok": false, "reason": "  End with Task complete.  "}')
    assert parsed == HookOutput("block", "End with Task complete.")


def test_extended_block_carries_reason() -> None:
    parsed = parse_hook_output('{"decision": "block", "reason": "Blocked: sudo"}')
    assert parsed == HookOutput("block", "Blocked: sudo")


def test_extended_allow_captures_additional_context() -> None:
    text = '{"decision": "allow", "hookSpecificOutput": {"additionalContext": "[AUDIT] x"}}'
    assert parse_hook_output(text) == HookOutput("allow", "", "[AUDIT] x")


def test_hook_specific_output_without_decision_means_allow() -> None:
    text = '{"hookSpecificOutput": {"additionalContext": "note"}}'
    assert parse_hook_output(text) == HookOutput("allow", "", "note")


def test_ask_is_accepted_at_pre_tool_use() -> None:
    parsed = parse_hook_output('{"decision": "ask", "reason": "risky"}', event="PreToolUse")
    assert parsed == HookOutput("ask", "risky")


@pytest.mark.parametrize("event", ["PostToolUse", "Stop"])
def test_ask_is_refused_outside_pre_tool_use(event: str) -> None:
    with pytest.raises(HookOutputError, match="only valid for PreToolUse"):
        parse_hook_output('{"decision": "ask"}', event=event)


def test_json_fence_is_tolerated() -> None:
    text = 'Here is my verdict:\n```json\n{"ok": false, "reason": "no"}\n```\n'
    assert parse_hook_output(text) == HookOutput("block", "no")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```{"ok": true}```', '{"ok": true}'),
        ('x ```JSON  {"ok": true}\n``` then ```json {} ```', '{"ok": true}'),
        ("```json```", ""),
        ("``` not closed", "``` not closed"),
        ("no fence", "no fence"),
    ],
)
def test_fence_bodies(text: str, expected: str) -> None:
    assert strip_fence(text) == expected


def test_an_unclosed_fence_over_blanks_is_parsed_in_linear_time() -> None:
    # A hook's stdout (up to a MiB) or a judge's answer: a backtracking fence pattern takes
    # cubic time here (seconds for 1,500 blanks, minutes for 4,000), on the agent's event
    # loop. The bound leaves a loaded machine room; the cubic case is far beyond it.
    started = time.monotonic()
    with pytest.raises(HookOutputError, match="not valid JSON"):
        parse_hook_output("```json" + " " * 4000 + "x")
    with pytest.raises(HookOutputError, match="not valid JSON"):
        parse_hook_output("```json" + " \n" * 500_000)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"ok": "yes"}', "ok must be true or false"),
        ('{"decision": "deny"}', "decision must be"),
        ('{"result": "fine"}', "neither 'ok' nor 'decision'"),
        ('{"ok": false, "reason": 42}', "reason must be a string"),
        ('{"decision": "allow", "hookSpecificOutput": []}', "must be an object"),
        (
            '{"decision": "allow", "hookSpecificOutput": {"additionalContext": 1}}',
            "additionalContext must be a string",
        ),
        ('{"ok": true} trailing', "not valid JSON"),
    ],
)
def test_malformed_answers_are_refused(text: str, message: str) -> None:
    with pytest.raises(HookOutputError, match=message):
        parse_hook_output(text)


def test_runner_modules_import_without_django() -> None:
    code = (
        "import sys, console_client.runners, console_client.sandbox, console_client.llm, "
        "console_client.transcript, console_client.hook_output; "
        "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
