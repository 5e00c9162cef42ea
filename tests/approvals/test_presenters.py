"""approvals/presenters.py: the arguments diff and the transcript as a conversation."""

from __future__ import annotations

import json

from approvals.presenters import DIFF_MAX_CHANGES, arguments_diff, transcript_view


def _changes(before, after):
    changes, more = arguments_diff(before, after)
    assert more == 0
    return [(c.pointer, c.kind, c.before, c.after) for c in changes]


def test_nested_objects_and_lists_diff_by_json_pointer():
    before = {"service": "web", "opts": {"a/b": 1, "t~": [1, 2, 3]}, "gone": None}
    after = {"service": "web", "opts": {"a/b": 2, "t~": [1, 5]}, "new": {"x": 1}}
    assert _changes(before, after) == [
        ("/gone", "removed", "null", ""),
        ("/new", "added", "", '{"x": 1}'),
        ("/opts/a~1b", "changed", "1", "2"),
        ("/opts/t~0/1", "changed", "2", "5"),
        ("/opts/t~0/2", "removed", "3", ""),
    ]


def test_values_equal_in_python_but_not_in_json_are_changes():
    assert _changes({"n": 1}, {"n": True}) == [("/n", "changed", "1", "true")]
    assert _changes({"n": 1}, {"n": 1.0}) == [("/n", "changed", "1", "1.0")]
    assert _changes({"n": 1}, {"n": 1}) == []


def test_a_different_kind_of_value_is_one_change_of_the_whole():
    assert _changes({"a": 1}, [1]) == [("", "changed", '{"a": 1}', "[1]")]


def test_a_huge_diff_is_cut_and_says_how_much_more():
    before = {f"k{n}": n for n in range(DIFF_MAX_CHANGES + 7)}
    changes, more = arguments_diff(before, {})
    assert len(changes) == DIFF_MAX_CHANGES and more == 7


def _line(role, content, **extra):
    return json.dumps(
        {"ts": "2026-01-02T03:04:05.000+00:00", "role": role, "content": content, **extra}
    )


def test_a_whole_first_line_is_a_message_and_a_fragment_is_dropped_as_cut():
    whole = "\n".join([_line("user", "hello"), _line("assistant", "hi")]) + "\n"
    view = transcript_view(whole)
    assert not view.cut and [m.text for m in view.messages] == ["hello", "hi"]
    assert view.messages[0].at is not None and view.messages[0].at.hour == 3
    cut = transcript_view('ntent": "tail of a long line"}\n' + whole)
    assert cut.cut and [m.text for m in cut.messages] == ["hello", "hi"]


def test_lines_that_are_not_entries_are_kept_as_unreadable_not_dropped():
    text = "\n".join([_line("user", "hello"), "not json", '{"no": "role"}'])
    view = transcript_view(text)
    assert [(m.kind, m.text) for m in view.messages] == [
        ("message", "hello"),
        ("unreadable", "not json"),
        ("unreadable", '{"no": "role"}'),
    ]


def test_plain_text_is_returned_raw_and_empty_is_empty():
    assert transcript_view("user: restart it please").raw == "user: restart it please"
    assert transcript_view("").messages == [] and transcript_view(" \n").raw == ""


def test_tool_calls_results_and_hook_context_get_their_own_kind():
    call = json.dumps({"tool_call": "scale", "args": {"n": 2}})
    text = "\n".join(
        [
            _line("assistant", call, tool_name="scale", call_id="c1"),
            _line("tool", "boom", tool_name="scale", call_id="c1", succeeded=False),
            _line("user", "be careful", additional_context_for="c1"),
            _line("assistant", "not a call", tool_name="scale"),
        ]
    )
    kinds = [(m.kind, m.tool_name, m.failed) for m in transcript_view(text).messages]
    assert kinds == [
        ("tool_call", "scale", False),
        ("tool_result", "scale", True),
        ("context", "", False),
        ("message", "", False),
    ]
    assert '"n": 2' in transcript_view(text).messages[0].arguments
