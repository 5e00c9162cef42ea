"""Every hook rule, proved through `PUT /api/v2/extendedAgent/agents/{name}`.

Each refusal asserts the 400 status, the error shape and the exact JSON pointer of the field.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents.models import Hook

NAME = "guarded"
URL = f"/api/v2/extendedAgent/agents/{NAME}"
PY_SCRIPT = '#!/usr/bin/env python3\nprint("{}")\n'


def _document(hooks: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": NAME},
        "spec": {"instructions": "Be careful.", "hooks": hooks},
    }


def _put(agent: Any, event: str, hook: dict[str, Any]) -> Any:
    return Client().put(
        URL,
        json.dumps(_document({event: [hook]})),
        content_type="application/json",
        **agent.headers(),
    )


def _refused(response: Any, at: str, fragment: str) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert set(error) == {"code", "message", "fields"}
    assert error["code"] == "invalid"
    assert isinstance(error["message"], str) and error["message"]
    assert at in error["fields"], error["fields"]
    assert any(fragment in message for message in error["fields"][at]), error["fields"][at]


def _stored_hook(response: Any, event: str) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.content
    return response.json()["spec"]["hooks"][event][0]


def _prompt(**extra: Any) -> dict[str, Any]:
    return {"type": "prompt", "prompt": "Did it finish? $ARGUMENTS", **extra}


def _command(**extra: Any) -> dict[str, Any]:
    return {"type": "command", "script": PY_SCRIPT, **extra}


# type


@pytest.mark.django_db
def test_unknown_hook_type_is_refused(sre):
    response = _put(sre, "Stop", {"type": "shell", "command": "true"})
    _refused(response, "/spec/hooks/Stop/0/type", "'shell'")


@pytest.mark.django_db
@pytest.mark.parametrize("event", ["Stop", "PostToolUse"])
def test_approval_hook_outside_pretooluse_is_refused(sre, event):
    response = _put(sre, event, {"type": "approval", "matcher": "*"})
    _refused(response, f"/spec/hooks/{event}/0/type", "only valid under PreToolUse")


@pytest.mark.django_db
def test_approval_hook_under_pretooluse_gets_its_defaults(sre):
    hook = _stored_hook(
        _put(sre, "PreToolUse", {"type": "approval", "matcher": "restart_.*"}), "PreToolUse"
    )
    assert hook == {
        "name": "PreToolUse restart_.*",
        "type": "approval",
        "matcher": "restart_.*",
        "expiresIn": 600,
        "approvalsRequired": 1,
        "mode": "enforce",
    }


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, 30 * 24 * 3600 + 1, "600"])
def test_approval_expires_in_out_of_range_is_refused(sre, value):
    response = _put(sre, "PreToolUse", {"type": "approval", "matcher": "*", "expiresIn": value})
    _refused(response, "/spec/hooks/PreToolUse/0/expiresIn", "expiresIn")


@pytest.mark.django_db
def test_approval_hook_refuses_a_script(sre):
    response = _put(sre, "PreToolUse", {"type": "approval", "matcher": "*", "script": PY_SCRIPT})
    _refused(response, "/spec/hooks/PreToolUse/0/script", "not valid for approval hooks")


@pytest.mark.django_db
def test_hook_without_type_is_a_prompt_hook(sre):
    hook = _stored_hook(_put(sre, "Stop", {"prompt": "Finished?"}), "Stop")
    assert hook["type"] == "prompt"


# prompt


@pytest.mark.django_db
@pytest.mark.parametrize("hook", [{"type": "prompt"}, {"type": "prompt", "prompt": "  "}])
def test_prompt_hook_without_a_prompt_is_refused(sre, hook):
    _refused(_put(sre, "Stop", hook), "/spec/hooks/Stop/0/prompt", "prompt is required")


@pytest.mark.django_db
def test_prompt_hook_refuses_a_script(sre):
    response = _put(sre, "Stop", _prompt(script=PY_SCRIPT))
    _refused(response, "/spec/hooks/Stop/0/script", "not valid for prompt hooks")


# command / script


@pytest.mark.django_db
def test_command_hook_with_neither_command_nor_script_is_refused(sre):
    response = _put(sre, "Stop", {"type": "command", "timeout": 5})
    _refused(response, "/spec/hooks/Stop/0/command", "exactly one of command or script")


@pytest.mark.django_db
def test_command_hook_with_both_command_and_script_is_refused(sre):
    response = _put(sre, "Stop", _command(command="exit 0"))
    _refused(response, "/spec/hooks/Stop/0/script", "mutually exclusive")


@pytest.mark.django_db
def test_inline_command_needs_no_shebang(sre):
    hook = _stored_hook(_put(sre, "Stop", {"type": "command", "command": "exit 0"}), "Stop")
    assert hook["command"] == "exit 0"


@pytest.mark.django_db
def test_script_of_exactly_64_kib_is_accepted(sre):
    header = "#!/bin/bash\n"
    script = header + "#" * (64 * 1024 - len(header))
    assert len(script.encode("utf-8")) == 65536
    hook = _stored_hook(_put(sre, "Stop", _command(script=script)), "Stop")
    assert hook["script"] == script


@pytest.mark.django_db
def test_script_of_65537_bytes_is_refused(sre):
    header = "#!/bin/bash\n"
    script = header + "#" * (64 * 1024 + 1 - len(header))
    response = _put(sre, "Stop", _command(script=script))
    _refused(response, "/spec/hooks/Stop/0/script", "65537 bytes")


@pytest.mark.django_db
def test_script_size_counts_utf8_bytes_not_characters(sre):
    header = "#!/bin/bash\n"
    # 40,000 characters of 'é' are 80,000 bytes: under the limit in characters, over it in bytes.
    script = header + "# " + "é" * 40_000
    assert len(script) < 65536 < len(script.encode("utf-8"))
    response = _put(sre, "Stop", _command(script=script))
    _refused(response, "/spec/hooks/Stop/0/script", "the limit is 65536 bytes")


@pytest.mark.django_db
@pytest.mark.parametrize("shebang", ["#!/bin/bash", "#!/usr/bin/env python3"])
def test_both_supported_shebangs_are_accepted(sre, shebang):
    script = f"{shebang}\nexit 0\n"
    assert _stored_hook(_put(sre, "Stop", _command(script=script)), "Stop")["script"] == script


@pytest.mark.django_db
@pytest.mark.parametrize(
    "first_line",
    [
        "#!/bin/sh",
        "#!/usr/bin/python3",
        "#!/bin/bash -e",
        "#!/bin/bash ",
        " #!/bin/bash",
        "echo hi",
    ],
)
def test_script_without_an_exact_supported_shebang_is_refused(sre, first_line):
    response = _put(sre, "Stop", _command(script=f"{first_line}\nexit 0\n"))
    _refused(response, "/spec/hooks/Stop/0/script", "script must start with")


# matcher


@pytest.mark.django_db
@pytest.mark.parametrize("event", ["PostToolUse", "PreToolUse"])
def test_tool_event_hook_without_matcher_is_refused(sre, event):
    _refused(_put(sre, event, _command()), f"/spec/hooks/{event}/0/matcher", "matcher is required")


@pytest.mark.django_db
@pytest.mark.parametrize("matcher", ["Bash(", "[a-", "*Bash"])
def test_matcher_that_does_not_compile_is_refused(sre, matcher):
    response = _put(sre, "PostToolUse", _command(matcher=matcher))
    _refused(response, "/spec/hooks/PostToolUse/0/matcher", "not a valid regular expression")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "matcher", ["(?!Read).*", "(?<=x)Bash", "(Bash)\\1", "Bash\\Z", "(?>Bash)"]
)
def test_matcher_only_a_backtracking_engine_runs_is_refused(sre, matcher):
    # Agents evaluate matchers in linear time (RE2): no lookaround, backreferences,
    # atomic groups or \Z. Python's `re` compiles every one of these.
    response = _put(sre, "PostToolUse", _command(matcher=matcher))
    _refused(response, "/spec/hooks/PostToolUse/0/matcher", "RE2 syntax")
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_a_matcher_with_a_lone_surrogate_is_refused(sre):
    body = json.dumps(_document({"PostToolUse": [_command(matcher="Bash\ud800")]}))
    assert "\\ud800" in body  # JSON carries it as an escape
    response = Client().put(URL, body, content_type="application/json", **sre.headers())
    _refused(response, "/spec/hooks/PostToolUse/0/matcher", "lone surrogate")
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_an_overlong_matcher_is_refused(sre):
    response = _put(sre, "PostToolUse", _command(matcher="|".join(["Tool"] * 1000)))
    _refused(response, "/spec/hooks/PostToolUse/0/matcher", "the limit is 1024")
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_a_matcher_that_backtracks_in_python_is_accepted_because_agents_run_it_linearly(sre):
    response = _put(sre, "PreToolUse", _command(matcher="(a+)+"))
    assert _stored_hook(response, "PreToolUse")["matcher"] == "(a+)+"


@pytest.mark.django_db
def test_non_string_matcher_is_refused(sre):
    response = _put(sre, "PostToolUse", _command(matcher=["Bash"]))
    _refused(response, "/spec/hooks/PostToolUse/0/matcher", "matcher must be a string")


@pytest.mark.django_db
def test_star_matcher_is_accepted_without_warning(sre):
    response = _put(sre, "PostToolUse", _command(matcher="*"))
    assert _stored_hook(response, "PostToolUse")["matcher"] == "*"
    assert "warnings" not in response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("matcher", ["", None])
def test_empty_or_null_matcher_is_accepted_with_a_warning(sre, matcher):
    response = _put(sre, "PostToolUse", _command(matcher=matcher))
    assert _stored_hook(response, "PostToolUse")["matcher"] == matcher
    warnings = response.json()["warnings"]
    assert "matches no tool" in warnings["/spec/hooks/PostToolUse/0/matcher"][0]


# timeout


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, 301, -1, "30", 30.5, True, None])
def test_timeout_that_is_not_an_integer_from_1_to_300_is_refused(sre, value):
    response = _put(sre, "PostToolUse", _command(matcher="*", timeout=value))
    _refused(response, "/spec/hooks/PostToolUse/0/timeout", "timeout must be")


@pytest.mark.django_db
@pytest.mark.parametrize("value", [1, 300])
def test_timeout_bounds_are_accepted(sre, value):
    assert _stored_hook(_put(sre, "Stop", _prompt(timeout=value)), "Stop")["timeout"] == value


@pytest.mark.django_db
def test_timeout_defaults_to_30(sre):
    assert _stored_hook(_put(sre, "Stop", _command()), "Stop")["timeout"] == 30


# failMode


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["deny", "Block", "", None])
def test_fail_mode_other_than_allow_or_block_is_refused(sre, value):
    response = _put(sre, "Stop", _command(failMode=value))
    _refused(response, "/spec/hooks/Stop/0/failMode", "failMode must be 'allow' or 'block'")


@pytest.mark.django_db
def test_fail_mode_block_is_kept_and_allow_is_the_default(sre):
    assert (
        _stored_hook(_put(sre, "Stop", _command(failMode="block")), "Stop")["failMode"] == "block"
    )
    assert _stored_hook(_put(sre, "Stop", _command()), "Stop")["failMode"] == "allow"


# model


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model",
    ["Reasoning", "ReasoningFast", "GeneralPurpose", "Fast", "LongContext", "gpt-4o-mini-2024"],
)
def test_model_tier_or_deployment_name_is_accepted(sre, model):
    assert _stored_hook(_put(sre, "Stop", _prompt(model=model)), "Stop")["model"] == model


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["not a model!", "", 5, "-leading-dash"])
def test_model_that_is_neither_tier_nor_deployment_is_refused(sre, model):
    response = _put(sre, "Stop", _prompt(model=model))
    _refused(response, "/spec/hooks/Stop/0/model", "model must be a tier")


@pytest.mark.django_db
def test_prompt_hook_model_defaults_to_reasoning_fast(sre):
    assert _stored_hook(_put(sre, "Stop", _prompt()), "Stop")["model"] == "ReasoningFast"


# maxRejections


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, 26, "3", 2.5, True])
def test_max_rejections_outside_1_to_25_is_refused(sre, value):
    response = _put(sre, "Stop", _prompt(maxRejections=value))
    _refused(response, "/spec/hooks/Stop/0/maxRejections", "maxRejections must be")


@pytest.mark.django_db
@pytest.mark.parametrize("value", [1, 25])
def test_max_rejections_bounds_are_accepted_without_warning(sre, value):
    response = _put(sre, "Stop", _prompt(maxRejections=value))
    assert _stored_hook(response, "Stop")["maxRejections"] == value
    assert "warnings" not in response.json()


@pytest.mark.django_db
def test_max_rejections_on_a_command_hook_is_accepted_with_a_warning(sre):
    response = _put(sre, "Stop", _command(maxRejections=5))
    assert _stored_hook(response, "Stop")["maxRejections"] == 5
    warning = response.json()["warnings"]["/spec/hooks/Stop/0/maxRejections"]
    assert "no effect on command hooks" in warning[0]


@pytest.mark.django_db
def test_max_rejections_outside_stop_is_accepted_with_a_warning(sre):
    response = _put(sre, "PostToolUse", _prompt(matcher="*", maxRejections=5))
    assert _stored_hook(response, "PostToolUse")["maxRejections"] == 5
    warning = response.json()["warnings"]["/spec/hooks/PostToolUse/0/maxRejections"]
    assert "no effect on PostToolUse hooks" in warning[0]


# unknown keys, enabled


@pytest.mark.django_db
def test_unknown_hook_key_is_refused_by_name(sre):
    response = _put(sre, "Stop", _prompt(retries=3))
    _refused(response, "/spec/hooks/Stop/0/retries", "Unknown field 'retries'")


@pytest.mark.django_db
def test_enabled_false_is_kept_on_the_stored_hook(sre):
    assert _stored_hook(_put(sre, "Stop", _prompt(enabled=False)), "Stop")["enabled"] is False


@pytest.mark.django_db
def test_enabled_that_is_not_a_boolean_is_refused(sre):
    response = _put(sre, "Stop", _prompt(enabled="no"))
    _refused(response, "/spec/hooks/Stop/0/enabled", "enabled must be true or false")


@pytest.mark.django_db
def test_hook_that_is_not_an_object_is_refused(sre):
    response = _put(sre, "Stop", "exit 0")  # type: ignore[arg-type]
    _refused(response, "/spec/hooks/Stop/0", "A hook must be an object")


@pytest.mark.django_db
def test_pointer_indexes_the_failing_hook_in_its_list(sre):
    body = _document({"PostToolUse": [_command(matcher="*"), _command(matcher="*", timeout=0)]})
    response = Client().put(URL, json.dumps(body), content_type="application/json", **sre.headers())
    _refused(response, "/spec/hooks/PostToolUse/1/timeout", "timeout must be")
    assert "/spec/hooks/PostToolUse/0/timeout" not in response.json()["error"]["fields"]
