"""Matcher rules and hook contexts built from SDK contexts."""

from __future__ import annotations

import time

import pytest
from agent_hooks import AgentContextBuilder

from console_client.context_mapping import (
    TurnFacts,
    final_text,
    hook_context,
    matcher_matches,
    sample_context,
)

FACTS = TurnFacts(agent_name="sre", current_turn=2, max_turns=40, transcript_path="/t.jsonl")


@pytest.mark.parametrize(
    ("matcher", "tool", "expected"),
    [
        ("*", "anything", True),
        ("Bash", "Bash", True),
        ("Bash", "BashTool", False),  # anchored
        ("Bash", "MyBash", False),
        ("bash", "Bash", False),  # case-sensitive
        ("Bash|ExecuteShellCommand", "ExecuteShellCommand", True),
        ("restart_.*", "restart_service", True),
        ("", "Bash", False),  # empty matches nothing
        (None, "Bash", False),  # null matches nothing
        ("(", "Bash", False),  # an invalid pattern matches nothing
    ],
)
def test_matcher(matcher, tool, expected):
    assert matcher_matches(matcher, tool) is expected


@pytest.mark.parametrize(
    ("matcher", "tool"),
    [("(a+)+", "a" * 30 + "b"), ("(a|aa)+", "a" * 45 + "b"), ("(\\w+\\d*)+", "w" * 30 + "!")],
)
def test_a_catastrophic_matcher_is_evaluated_in_linear_time(matcher, tool):
    # Python's backtracking `re` takes seconds to hours on these (holding the interpreter
    # lock, so nothing else in the agent runs meanwhile).
    started = time.monotonic()
    assert matcher_matches(matcher, tool) is False
    assert time.monotonic() - started < 3.0  # backtracking takes a minute or more here


@pytest.mark.parametrize(
    ("matcher", "tool", "expected"),
    [
        ("Bash", "Bash\n", False),  # the whole name: no match before a trailing newline
        ("(?!Read).*", "Bash", False),  # lookaround is not RE2: the console refuses it
        ("(?i:bash)", "Bash", True),  # case-insensitive only when asked for
        (".*", "Bash\ud800", True),  # a lone surrogate from JSON is a character, not an error
        ("Bash\ud800", "Bash\ud800", False),  # such a matcher does not compile
    ],
)
def test_matcher_edge_cases_of_the_linear_engine(matcher, tool, expected):
    assert matcher_matches(matcher, tool) is expected


def builder():
    return AgentContextBuilder(agent_id="sre", framework="agent-framework", session_id="s")


def test_post_tool_use_context_has_exactly_the_spec_fields():
    ctx = builder().post_tool_call(call_id="c", name="Bash", args={"command": "ls"}, value="a\nb")
    assert hook_context("PostToolUse", ctx, FACTS) == {
        "hook_event_name": "PostToolUse",
        "agent_name": "sre",
        "current_turn": 2,
        "max_turns": 40,
        "execution_summary": "/t.jsonl",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_result": "a\nb",
        "tool_succeeded": True,
    }


def test_pre_tool_use_context():
    ctx = builder().pre_tool_call(call_id="c", name="Bash", args={"command": "ls"})
    got = hook_context("PreToolUse", ctx, FACTS)
    assert got["tool_name"] == "Bash" and got["tool_input"] == {"command": "ls"}
    assert "tool_result" not in got


def test_stop_context_takes_the_last_assistant_text():
    content = [
        {"role": "assistant", "content": [{"type": "function_call", "name": "Bash"}]},
        {"role": "tool", "content": [{"type": "function_result", "result": "x"}]},
        {"role": "assistant", "content": "All done. Task complete."},
    ]
    ctx = builder().output(content=content)
    facts = TurnFacts("sre", 3, 40, "/t", stop_rejection_count=1)
    got = hook_context("Stop", ctx, facts)
    assert got["final_output"] == "All done. Task complete."
    assert got["stop_hook_active"] is True
    assert got["stop_rejection_count"] == 1


def test_final_text_of_a_plain_string():
    assert final_text("hello") == "hello"


@pytest.mark.parametrize("event", ["Stop", "PostToolUse", "PreToolUse"])
def test_sample_contexts_use_the_spec_field_names(event):
    sample = sample_context(event, "sre-agent")
    common = {"hook_event_name", "agent_name", "current_turn", "max_turns", "execution_summary"}
    extra = {
        "Stop": {"final_output", "stop_hook_active", "stop_rejection_count"},
        "PostToolUse": {"tool_name", "tool_input", "tool_result", "tool_succeeded"},
        "PreToolUse": {"tool_name", "tool_input"},
    }[event]
    assert set(sample) == common | extra
