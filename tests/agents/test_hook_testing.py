""" "Test this hook": the service runs the hook through console_client's runners; the
portal view is admin-only and renders the result partial."""

from __future__ import annotations

import json

import pytest
import yaml

from agents.hook_testing import hook_test_run, sample_context
from agents.models import Hook
from agents.services import agent_hooks_replace
from console.celery import app as celery_app
from console.errors import InvalidInput
from console.governance.models import GovernanceEvent
from demo.documents import (
    AUDIT_ALL_TOOLS_HOOK_YAML,
    COMPLETION_MARKER_STOP_HOOK_YAML,
    SEED_CUSTOM_AGENT_YAML,
)
from tests.console_client.scripted_http import ScriptedHTTP

DANGEROUS = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)["spec"]["hooks"]["PostToolUse"][0]
AUDIT = yaml.safe_load(AUDIT_ALL_TOOLS_HOOK_YAML)["hooks"]["PostToolUse"][0]
SEED_STOP = yaml.safe_load(COMPLETION_MARKER_STOP_HOOK_YAML)["hooks"]["Stop"][0]


@pytest.mark.django_db
def test_seed_dangerous_command_script_blocks_rm_rf(alice):
    context = {**sample_context("PostToolUse", "sre"), "tool_input": {"command": "rm -rf /"}}
    outcome = hook_test_run(
        actor=alice, hook_definition=DANGEROUS, event="PostToolUse", context=context
    )
    assert outcome["decision"] == "block"
    assert outcome["reason"] == "Blocked: \\brm\\s+-rf\\b"
    assert outcome["exit_code"] == 0
    assert '"decision": "block"' in outcome["stdout"]
    assert outcome["duration_ms"] > 0
    assert outcome["error"] is None
    event = GovernanceEvent.objects.get(action="hook.tested")
    assert event.actor == alice
    assert event.after["decision"] == "block"


@pytest.mark.django_db
def test_seed_stop_script_rejects_with_its_stderr(alice):
    outcome = hook_test_run(
        actor=alice,
        hook_definition=SEED_STOP,
        event="Stop",
        context=sample_context("Stop", "sre"),
    )
    assert outcome["decision"] == "block"
    assert outcome["exit_code"] == 2
    assert outcome["reason"] == "Please end your response with 'Task complete.'"
    assert "Task complete" in outcome["stderr"]


@pytest.mark.django_db
def test_audit_script_returns_additional_context(alice):
    outcome = hook_test_run(
        actor=alice,
        hook_definition=AUDIT,
        event="PostToolUse",
        context=sample_context("PostToolUse", "sre"),
    )
    assert outcome["decision"] == "allow"
    assert outcome["additional_context"] == "[AUDIT] Tool 'Bash' was executed."
    assert "Tool used: Bash" in outcome["stderr"]


@pytest.mark.django_db
def test_the_hook_reads_the_sample_transcript_through_execution_summary(alice):
    hook = {
        "type": "command",
        "command": 'jq -r .content "$(jq -r .execution_summary)" | head -1 >&2; exit 2',
    }
    outcome = hook_test_run(
        actor=alice, hook_definition=hook, event="Stop", context=sample_context("Stop", "sre")
    )
    assert outcome["reason"] == "The api service returns 502s. Please fix it."


@pytest.mark.django_db
def test_prompt_hook_goes_through_the_llm_judge(alice, monkeypatch):
    judge = ScriptedHTTP().start()
    answer = {"ok": False, "reason": "No ticket number."}
    judge.route(
        "POST",
        "/v1/chat/completions",
        (200, {"choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}}]}),
    )
    monkeypatch.setenv("CONSOLE_LLM_BASE_URL", f"{judge.url}/v1")
    try:
        outcome = hook_test_run(
            actor=alice,
            hook_definition={"type": "prompt", "prompt": "Check: $ARGUMENTS"},
            event="Stop",
            context=sample_context("Stop", "sre"),
        )
    finally:
        judge.stop()
    assert outcome["decision"] == "block"
    assert outcome["reason"] == "No ticket number."
    assert "Restarted the api service" in judge.seen[0].body["messages"][1]["content"]


@pytest.mark.django_db
def test_approval_hooks_are_described_not_run(alice):
    outcome = hook_test_run(
        actor=alice,
        hook_definition={"type": "approval", "matcher": "restart_service"},
        event="PreToolUse",
        context={**sample_context("PreToolUse", "sre"), "tool_name": "restart_service"},
    )
    assert outcome["decision"] == "ask"
    assert "600 s" in outcome["reason"]


@pytest.mark.django_db
def test_an_approval_hook_for_another_tool_does_not_run(alice):
    outcome = hook_test_run(
        actor=alice,
        hook_definition={"type": "approval", "matcher": "restart_service"},
        event="PreToolUse",
        context=sample_context("PreToolUse", "sre"),
    )
    assert outcome == {
        "skipped": "This hook would not run for tool 'Bash': its matcher 'restart_service' "
        "does not match it."
    }
    assert not GovernanceEvent.objects.filter(action="hook.tested").exists()


@pytest.mark.django_db
def test_invalid_definition_and_context_name_their_fields(alice):
    with pytest.raises(InvalidInput) as failed:
        hook_test_run(
            actor=alice,
            hook_definition={"type": "command", "timeout": 0, "command": "true"},
            event="PostToolUse",
            context=["not", "an", "object"],
        )
    assert set(failed.value.fields) == {"/timeout", "/matcher", "/context"}
    assert not GovernanceEvent.objects.filter(action="hook.tested").exists()


URL = "/agents/sre-agent/hooks/test"


@pytest.fixture
def eager():
    """Run the task in-process (no worker in this test run; production waits on Redis)."""
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.fixture
def dangerous_hook(sre):
    agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"PostToolUse": [DANGEROUS]}}
    )
    return Hook.objects.get(agent=sre.agent)


def form_fields(hook: dict) -> dict:
    return {key: value for key, value in hook.items() if key != "type"} | {"type": hook["type"]}


@pytest.mark.django_db
def test_panel_is_prefilled_with_the_events_sample_context(admin_client, dangerous_hook):
    response = admin_client.get(URL, {"hook": dangerous_hook.key})
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="event" value="PostToolUse"' in body
    assert "tool_succeeded" in body and 'hx-include="#hook-form"' in body


@pytest.mark.django_db
def test_admin_runs_a_test_and_gets_the_result_partial(admin_client, dangerous_hook, eager):
    context = {**sample_context("PostToolUse", "sre"), "tool_input": {"command": "sudo ls"}}
    response = admin_client.post(
        URL,
        {
            **form_fields(DANGEROUS),
            "event": "PostToolUse",
            "hook": dangerous_hook.key,
            "context": json.dumps(context),
        },
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200, response.content
    body = response.content.decode()
    assert 'data-decision="block"' in body
    assert "Blocked: \\bsudo\\b" in body
    event = GovernanceEvent.objects.get(action="hook.tested")
    assert event.object_id == str(dangerous_hook.pk)


@pytest.mark.django_db
def test_bad_context_json_is_reported_without_running(admin_client, dangerous_hook, eager):
    response = admin_client.post(
        URL, {**form_fields(DANGEROUS), "event": "PostToolUse", "context": "{nope"}
    )
    assert response.status_code == 400
    assert "Sample context: not valid JSON" in response.content.decode()
    assert not GovernanceEvent.objects.filter(action="hook.tested").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["reviewer_client", "auditor_client", "outsider_client"])
def test_only_admins_may_test_hooks(persona, request, sre):
    client = request.getfixturevalue(persona)
    assert client.get(URL).status_code == 403
    assert (
        client.post(URL, {"type": "command", "command": "true", "event": "Stop"}).status_code == 403
    )


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client, sre):
    response = client.post(URL, {"event": "Stop"})
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_a_shadow_hook_that_blocks_says_nothing_would_be_blocked(alice):
    # Found trying the console as an admin: the panel said "an agent would not make the
    # call" for a shadow hook, which only records that it would have blocked.
    context = {**sample_context("PostToolUse", "sre"), "tool_input": {"command": "rm -rf /"}}
    for mode, shadowed in (("shadow", True), ("enforce", False)):
        outcome = hook_test_run(
            actor=alice, hook_definition={**DANGEROUS, "mode": mode}, event="PostToolUse",
            context=context,
        )  # fmt: skip
        assert outcome["verdict"] == "block"
        assert outcome["effect"].startswith("Shadow mode: nothing is blocked") is shadowed
