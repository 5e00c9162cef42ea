"""The hook form: every hook rule reaches the field it concerns, nothing is written
on error, warnings are shown beside the field after save, and htmx gets the form partial."""

from __future__ import annotations

import re

import pytest

from agents import services
from agents.forms import HookForm
from agents.models import Hook

URL = "/agents/sre-agent/hooks/new/"


def _post(client, **fields):
    data = {
        "name": "Bash audit",
        "mode": "enforce",
        "event": "PostToolUse",
        "type": "command",
        "matcher": "Bash",
        "command": "echo ok",
        **fields,
    }
    return client.post(URL, {k: v for k, v in data.items() if v is not None})


def _field_html(html: str, name: str) -> str:
    """The rendered block of one field (from its wrapper to the next field's wrapper)."""
    start = html.index(f'id="field-{name}"')
    following = html.find('id="field-', start + 1)
    return html[start : following if following != -1 else len(html)]


def _refused(response, field: str, fragment: str) -> None:
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert field in errors, errors
    assert any(fragment in message for message in errors[field]), errors[field]
    block = _field_html(response.content.decode(), field)
    assert 'class="errorlist"' in block and fragment in block
    assert not Hook.objects.filter(agent__slug="sre-agent").exists()


@pytest.mark.django_db
def test_a_valid_command_hook_is_created_with_defaults(admin_client, sre):
    response = _post(admin_client)
    assert response.status_code == 302
    hook = Hook.objects.get(agent=sre.agent, custom_agent=None)
    assert hook.event == "PostToolUse"
    assert hook.definition == {
        "type": "command",
        "matcher": "Bash",
        "command": "echo ok",
        "timeout": 30,
        "failMode": "allow",
    }
    assert response.url == "/agents/sre-agent/"


@pytest.mark.django_db
def test_unknown_type_is_refused_on_the_type_field(admin_client, sre):
    _refused(_post(admin_client, type="webhook"), "type", "type must be")


@pytest.mark.django_db
def test_prompt_is_required_for_prompt_hooks(admin_client, sre):
    _refused(
        _post(admin_client, event="Stop", type="prompt", command=None, matcher=None),
        "prompt",
        "prompt is required",
    )


@pytest.mark.django_db
def test_command_and_script_are_mutually_exclusive(admin_client, sre):
    _refused(_post(admin_client, script="#!/bin/bash\necho hi\n"), "script", "mutually exclusive")


@pytest.mark.django_db
def test_command_hook_needs_a_command_or_a_script(admin_client, sre):
    _refused(_post(admin_client, command=None), "command", "exactly one of command or script")


@pytest.mark.django_db
def test_script_over_64_kb_in_utf8_bytes_is_refused_though_under_64k_characters(admin_client, sre):
    script = "#!/bin/bash\n# " + "é" * 33_000 + "\n"
    assert len(script) < 64 * 1024 < len(script.encode("utf-8"))
    _refused(_post(admin_client, command=None, script=script), "script", "65536 bytes")


@pytest.mark.django_db
def test_script_needs_a_supported_shebang(admin_client, sre):
    _refused(
        _post(admin_client, command=None, script="#!/bin/sh\necho hi\n"),
        "script",
        "must start with",
    )


@pytest.mark.django_db
@pytest.mark.parametrize("event", ["PostToolUse", "PreToolUse"])
def test_matcher_is_required_for_tool_events(admin_client, sre, event):
    _refused(_post(admin_client, event=event, matcher=None), "matcher", "matcher is required")


@pytest.mark.django_db
def test_matcher_must_compile_as_a_regular_expression(admin_client, sre):
    _refused(_post(admin_client, matcher="Bash(|"), "matcher", "not a valid regular expression")


@pytest.mark.django_db
@pytest.mark.parametrize("timeout", ["0", "301"])
def test_timeout_outside_1_to_300_is_refused(admin_client, sre, timeout):
    _refused(_post(admin_client, timeout=timeout), "timeout", "between 1 and 300")


@pytest.mark.django_db
@pytest.mark.parametrize("timeout", ["1", "300"])
def test_timeout_bounds_are_accepted(admin_client, sre, timeout):
    assert _post(admin_client, timeout=timeout).status_code == 302
    assert Hook.objects.get(agent=sre.agent).definition["timeout"] == int(timeout)


@pytest.mark.django_db
def test_fail_mode_must_be_allow_or_block(admin_client, sre):
    _refused(_post(admin_client, failMode="explode"), "failMode", "failMode must be")


@pytest.mark.django_db
def test_model_deployment_name_must_be_a_valid_name(admin_client, sre):
    _refused(
        _post(
            admin_client,
            event="Stop",
            type="prompt",
            command=None,
            matcher=None,
            prompt="Is it done?",
            model_deployment="not a deployment!",
        ),
        "model_deployment",
        "model must be a tier",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "stored"),
    [({"model": "Fast"}, "Fast"), ({"model_deployment": "gpt-4o-mini-eu"}, "gpt-4o-mini-eu")],
)
def test_model_takes_a_tier_or_a_deployment_name(admin_client, sre, fields, stored):
    response = _post(
        admin_client,
        event="Stop",
        type="prompt",
        command=None,
        matcher=None,
        prompt="Is it done?",
        **fields,
    )
    assert response.status_code == 302
    assert Hook.objects.get(agent=sre.agent).definition["model"] == stored


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["0", "26"])
def test_max_rejections_outside_1_to_25_is_refused(admin_client, sre, value):
    _refused(
        _post(
            admin_client,
            event="Stop",
            type="prompt",
            command=None,
            matcher=None,
            prompt="Is it done?",
            maxRejections=value,
        ),
        "maxRejections",
        "between 1 and 25",
    )


@pytest.mark.django_db
def test_approval_hooks_are_refused_outside_pre_tool_use(admin_client, sre):
    _refused(
        _post(admin_client, type="approval", command=None), "type", "only valid under PreToolUse"
    )


@pytest.mark.django_db
def test_approval_hook_under_pre_tool_use_is_created(admin_client, sre):
    response = _post(
        admin_client,
        event="PreToolUse",
        type="approval",
        command=None,
        matcher="restart_service",
        expiresIn="120",
    )
    assert response.status_code == 302
    definition = Hook.objects.get(agent=sre.agent).definition
    assert definition == {
        "type": "approval",
        "matcher": "restart_service",
        "expiresIn": 120,
        "approvalsRequired": 1,
    }


@pytest.mark.django_db
def test_unknown_event_is_refused_on_the_event_field(admin_client, sre):
    _refused(_post(admin_client, event="PreCompact"), "event", "event must be")


@pytest.mark.django_db
def test_max_rejections_on_a_command_hook_is_saved_with_a_warning_beside_the_field(
    admin_client, sre
):
    response = _post(admin_client, event="Stop", matcher=None, maxRejections="5")
    hook = Hook.objects.get(agent=sre.agent)
    assert hook.definition["maxRejections"] == 5
    assert response.status_code == 302
    assert response.url == f"/agents/sre-agent/hooks/{hook.key}/"
    page = admin_client.get(response.url).content.decode()
    assert "with warnings" in page
    block = _field_html(page, "maxRejections")
    assert 'class="warnlist"' in block
    assert "maxRejections has no effect on command hooks" in block


@pytest.mark.django_db
def test_browser_crlf_line_endings_are_stored_as_lf(admin_client, sre):
    script = "#!/bin/bash\r\necho hi\r\n"
    assert _post(admin_client, command=None, script=script).status_code == 302
    assert Hook.objects.get(agent=sre.agent).definition["script"] == "#!/bin/bash\necho hi\n"


@pytest.mark.django_db
def test_htmx_submit_with_errors_returns_only_the_form_partial(admin_client, sre):
    response = admin_client.post(
        URL,
        {
            "event": "PostToolUse",
            "type": "command",
            "matcher": "Bash",
            "command": "x",
            "timeout": "301",
        },
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<form id="hook-form"')
    assert "<html" not in html and "mode-banner" not in html
    assert re.search(r'id="field-timeout".*?class="errorlist".*?between 1 and 300', html, re.S)


@pytest.mark.django_db
def test_htmx_submit_that_saves_redirects_the_client(admin_client, sre):
    response = admin_client.post(
        URL,
        {"event": "PostToolUse", "type": "command", "matcher": "Bash", "command": "x"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/agents/sre-agent/"
    assert Hook.objects.filter(agent=sre.agent).count() == 1


@pytest.mark.django_db
def test_custom_agent_hooks_use_the_same_form_and_rules(admin_client, sre):
    admin_client.post("/agents/sre-agent/custom/", {"name": "triage"})
    url = "/agents/sre-agent/custom/triage/hooks/new/"
    bad = admin_client.post(url, {"event": "PostToolUse", "type": "command", "command": "x"})
    assert "matcher is required" in " ".join(bad.context["form"].errors["matcher"])
    good = admin_client.post(
        url, {"event": "PostToolUse", "type": "command", "command": "x", "matcher": "*"}
    )
    assert good.status_code == 302
    assert good.url == "/agents/sre-agent/custom/triage/"
    hook = Hook.objects.get(agent=sre.agent)
    assert hook.custom_agent is not None and hook.custom_agent.name == "triage"


@pytest.mark.django_db
def test_hook_pages_load_the_test_this_hook_panel_for_that_hook(admin_client, sre):
    _post(admin_client)
    hook = Hook.objects.get(agent=sre.agent)
    edit = admin_client.get(f"/agents/sre-agent/hooks/{hook.key}/").content.decode()
    assert f'hx-get="/agents/sre-agent/hooks/test?hook={hook.key}"' in edit
    create = admin_client.get(URL + "?event=Stop").content.decode()
    assert 'id="hook-test-panel"' in create and "/agents/sre-agent/hooks/test?event=" in create
    panel = admin_client.get(f"/agents/sre-agent/hooks/test?hook={hook.key}")
    assert panel.status_code == 200 and b'id="hook-test-form"' in panel.content


@pytest.mark.django_db
def test_the_test_panel_link_keeps_a_hostile_event_value_inside_its_parameter(admin_client, sre):
    _post(admin_client)
    hook = Hook.objects.get(agent=sre.agent)
    create = admin_client.get(URL, {"event": f"Stop&hook={hook.key}"}).content.decode()
    links = re.findall(r'(?:hx-get|href)="(/agents/sre-agent/hooks/test\?[^"]*)"', create)
    assert len(links) == 2
    for link in links:
        assert link == f"/agents/sre-agent/hooks/test?event=Stop%26hook%3D{hook.key}", link


@pytest.mark.parametrize(
    ("event", "hook_type", "applies", "not_applies"),
    [
        ("Stop", "prompt", {"prompt", "model", "timeout", "failMode", "maxRejections"},
         {"matcher", "command", "script", "expiresIn", "approvalsRequired"}),
        ("PostToolUse", "command", {"matcher", "command", "script", "timeout", "failMode"},
         {"prompt", "model", "maxRejections", "expiresIn", "approvalsRequired"}),
        ("PreToolUse", "approval", {"matcher", "expiresIn", "approvalsRequired"},
         {"prompt", "command", "timeout", "failMode", "maxRejections", "model"}),
    ],
)  # fmt: skip
def test_the_form_knows_which_fields_apply_to_an_event_and_type(
    event, hook_type, applies, not_applies
):
    form = HookForm({"event": event, "type": hook_type})
    assert {name for name in applies | not_applies if form.field_applies(name)} == applies
    assert form.field_applies("enabled") and form.field_applies("type")


@pytest.mark.django_db
def test_fields_carry_where_they_apply_and_say_so_without_javascript(admin_client, sre):
    html = admin_client.get(URL + "?event=Stop").content.decode()
    matcher = _field_html(html, "matcher")
    assert 'data-events="PostToolUse PreToolUse"' in matcher
    assert 'field-na" id="field-matcher"' in html
    assert "Not used by Stop hooks." in matcher and "Not used by the hook as chosen" in matcher
    rejections = _field_html(html, "maxRejections")
    assert 'data-types="prompt" data-events="Stop"' in rejections
    assert 'field-na" id="field-maxRejections"' not in html
    assert "Prompt hooks on Stop only." in rejections


@pytest.mark.django_db
def test_editing_a_hook_judges_the_fields_by_its_stored_event(admin_client, sre):
    hook, _ = services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=None,
        event="PreToolUse",
        raw={"type": "approval", "matcher": "deploy"},
    )
    form = admin_client.get(f"/agents/sre-agent/hooks/{hook.key}/").context["form"]
    assert form.field_applies("approvalsRequired") and not form.field_applies("timeout")
    posted = HookForm({"event": "Stop", "type": "approval"}, hook=hook)
    assert posted.field_applies("matcher")  # the event cannot change on edit
