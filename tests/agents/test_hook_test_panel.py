""" "Test this hook" tells the truth and never holds the request: the matcher first, errors
as errors with what failMode would do, bad JSON replacing the previous result, and a status
that polls the task until its result is stored."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from celery.backends.base import DisabledBackend
from celery.result import AsyncResult

from agents import views_hooktest
from agents.hook_testing import sample_context
from agents.models import Hook
from agents.services import agent_hooks_replace
from agents.tasks import hook_test_run_task
from console.celery import app as celery_app
from console.governance.models import GovernanceEvent

URL = "/agents/sre-agent/hooks/test"
HTMX = {"HTTP_HX_REQUEST": "true"}
SUDO_CHECK = {"type": "command", "matcher": "Bash", "command": "exit 0", "failMode": "allow"}


@pytest.fixture
def eager():
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.fixture
def bash_hook(sre: Any) -> Hook:
    agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"PreToolUse": [SUDO_CHECK]}}
    )
    return Hook.objects.get(agent=sre.agent)


def _post(client: Any, hook: dict[str, Any], context: Any, event: str = "PreToolUse", **extra):
    text = context if isinstance(context, str) else json.dumps(context)
    data = {**{k: str(v) for k, v in hook.items()}, "event": event, "context": text}
    return client.post(URL, data, **extra)


def _pre_tool(tool: str) -> dict[str, Any]:
    return {**sample_context("PreToolUse", "sre"), "tool_name": tool}


@pytest.mark.django_db
def test_a_tool_the_matcher_skips_is_reported_as_not_run(admin_client, bash_hook, monkeypatch):
    started = []
    monkeypatch.setattr(hook_test_run_task, "delay", lambda **kw: started.append(kw))
    response = _post(admin_client, SUDO_CHECK, _pre_tool("Read"), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "This hook would not run for tool &#x27;Read&#x27;" in body
    assert 'data-decision="not run"' in body and 'data-decision="allow"' not in body
    assert started == [] and not GovernanceEvent.objects.filter(action="hook.tested").exists()


@pytest.mark.django_db
def test_a_failed_tool_skips_post_tool_use_hooks(admin_client, sre, eager):
    context = {**sample_context("PostToolUse", "sre"), "tool_succeeded": False}
    hook = {**SUDO_CHECK, "matcher": "*"}
    body = _post(admin_client, hook, context, event="PostToolUse", **HTMX).content.decode()
    assert "PostToolUse hooks run only after a tool succeeded" in body


@pytest.mark.django_db
def test_a_prompt_stop_hook_past_max_rejections_does_not_run(admin_client, sre, eager):
    context = {**sample_context("Stop", "sre"), "stop_rejection_count": 2}
    hook = {"type": "prompt", "prompt": "Done? $ARGUMENTS", "maxRejections": 2}
    body = _post(admin_client, hook, context, event="Stop", **HTMX).content.decode()
    assert "stop after maxRejections (2)" in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fail_mode", "would"), [("block", "<strong>block</strong>"), ("allow", "let the call go on")]
)
def test_a_hook_error_is_an_error_with_what_fail_mode_does(
    admin_client, sre, eager, fail_mode, would
):
    hook = {**SUDO_CHECK, "command": "echo broken >&2; exit 7", "failMode": fail_mode}
    body = _post(admin_client, hook, _pre_tool("Bash"), **HTMX).content.decode()
    assert 'data-outcome="error"' in body and "hook error" in body
    assert f"failMode: {fail_mode}" in body and would in body
    assert 'data-decision="allow"' not in body and "badge ok" not in body


@pytest.mark.django_db
def test_a_timeout_is_named_as_a_timeout(admin_client, sre, eager):
    hook = {**SUDO_CHECK, "command": "sleep 5", "timeout": "1", "failMode": "block"}
    body = _post(admin_client, hook, _pre_tool("Bash"), **HTMX).content.decode()
    assert 'data-decision="error">timeout<' in body
    assert "timed out after 1 s" in body and "<strong>block</strong>" in body


@pytest.mark.django_db
def test_a_prompt_hook_without_an_llm_endpoint_says_so(admin_client, sre, eager, monkeypatch):
    for name in ("CONSOLE_LLM_BASE_URL", "CONSOLE_LLM_API_KEY", "CONSOLE_LLM_MODELS"):
        monkeypatch.delenv(name, raising=False)
    hook = {"type": "prompt", "matcher": "Bash", "prompt": "Safe? $ARGUMENTS"}
    body = _post(admin_client, hook, _pre_tool("Bash"), **HTMX).content.decode()
    assert 'data-decision="error">no LLM endpoint<' in body
    assert "No LLM endpoint is configured" in body and "failMode: allow" in body


@pytest.mark.django_db
def test_bad_json_replaces_the_result_with_an_error_naming_the_field(admin_client, bash_hook):
    response = _post(admin_client, SUDO_CHECK, '{"tool_name": "Bash",', **HTMX)
    body = response.content.decode()
    # htmx swaps only 2xx answers: a 4xx here would leave the previous result on screen.
    assert response.status_code == 200
    assert "Sample context: not valid JSON" in body and 'data-outcome="invalid"' in body
    assert "<html" not in body


@pytest.mark.django_db
def test_without_javascript_errors_come_back_as_a_whole_page_with_400(admin_client, bash_hook):
    response = _post(admin_client, SUDO_CHECK, "[1, 2")
    assert response.status_code == 400
    body = response.content.decode()
    assert "<html" in body and "Sample context: not valid JSON" in body
    assert "[1, 2" in body  # what the admin typed is kept


@pytest.mark.django_db
def test_a_plain_post_without_the_editor_tests_the_saved_hook(admin_client, bash_hook, eager):
    data = {"hook": bash_hook.key, "context": json.dumps(_pre_tool("Bash"))}
    response = admin_client.post(URL, data)
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" in body and 'data-decision="allow"' in body


# Polling needs a result store (REDIS_URL); the embedded default runs tasks in-process.
needs_result_store = pytest.mark.skipif(
    isinstance(celery_app.backend, DisabledBackend), reason="no Celery result backend"
)


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`.delay()` queues without running (as with a worker that has not taken it yet)."""
    ids: list[str] = []

    def delay(**kwargs: Any) -> AsyncResult:
        ids.append(str(uuid.uuid4()))
        return AsyncResult(ids[-1], app=celery_app)

    monkeypatch.setattr(hook_test_run_task, "delay", delay)
    return ids


def _status_url(body: str) -> str:
    start = body.index('hx-get="') + len('hx-get="')
    return body[start : body.index('"', start)]


@needs_result_store
@pytest.mark.django_db
def test_a_queued_run_answers_at_once_with_a_status_that_polls(admin_client, bash_hook, queued):
    response = _post(admin_client, SUDO_CHECK, _pre_tool("Bash"), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and 'data-outcome="pending"' in body
    assert 'hx-trigger="load delay:1s"' in body and 'hx-swap="outerHTML"' in body
    status_url = _status_url(body)
    assert status_url.startswith(URL + "/") and f'href="{status_url}"' in body

    still = admin_client.get(status_url, **HTMX).content.decode()
    assert 'data-outcome="pending"' in still and _status_url(still) == status_url

    outcome = {"verdict": "block", "effect": "An agent would not make the call: No sudo.",
               "decision": "block", "reason": "No sudo.", "stdout": "", "stderr": "",
               "exit_code": 2, "duration_ms": 3.0, "error": None, "error_kind": "",
               "additional_context": None, "fail_mode": "allow"}  # fmt: skip
    celery_app.backend.store_result(queued[0], outcome, "SUCCESS")
    try:
        done = admin_client.get(status_url, **HTMX)
        assert done.status_code == 200
        assert (
            'data-decision="block"' in done.content.decode() and "No sudo." in done.content.decode()
        )
        assert "hx-trigger" not in done.content.decode()
    finally:
        celery_app.backend.forget(queued[0])


@needs_result_store
@pytest.mark.django_db
def test_without_javascript_a_queued_run_refreshes_itself(admin_client, bash_hook, queued):
    response = _post(admin_client, SUDO_CHECK, _pre_tool("Bash"))
    assert response.status_code == 202
    body = response.content.decode()
    url = _status_url(body)
    assert f'<meta http-equiv="refresh" content="2;url={url}">' in body
    page = admin_client.get(url)
    assert page.status_code == 202 and "Refresh</a>" in page.content.decode()


@needs_result_store
@pytest.mark.django_db
def test_a_failed_task_is_shown_as_an_error(admin_client, bash_hook, queued):
    body = _post(admin_client, SUDO_CHECK, _pre_tool("Bash"), **HTMX).content.decode()
    celery_app.backend.mark_as_failure(queued[0], RuntimeError("worker lost"))
    try:
        done = admin_client.get(_status_url(body), **HTMX).content.decode()
        assert "The test run failed" in done and "worker lost" in done
    finally:
        celery_app.backend.forget(queued[0])


@needs_result_store
@pytest.mark.django_db
def test_a_status_link_is_bound_to_its_agent(admin_client, bash_hook, other):
    token = views_hooktest.status_token(other.agent, "some-run", None, "Stop")
    assert admin_client.get(f"{URL}/{token}").status_code == 404
    assert admin_client.get(f"{URL}/{token[:-2]}xx").status_code == 404
    foreign = f"/agents/{other.agent.slug}/hooks/test/{token}"
    assert admin_client.get(foreign).status_code == 202


@pytest.mark.django_db
def test_the_label_names_no_internal_document(admin_client, bash_hook):
    body = admin_client.get(URL, {"hook": bash_hook.key}, **HTMX).content.decode()
    assert "Sample context (JSON" in body and "SPEC" not in body


@pytest.mark.django_db
def test_without_a_result_store_a_status_link_is_not_found(admin_client, sre, monkeypatch):
    monkeypatch.setattr(celery_app, "_local", type(celery_app._local)())
    monkeypatch.setattr(celery_app.conf, "result_backend", "disabled")
    token = views_hooktest.status_token(sre.agent, "some-run", None, "Stop")
    assert admin_client.get(f"{URL}/{token}").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("event", "command", "verdict", "effect"),
    [
        # A Stop rejection without a reason counts as approval.
        ("Stop", """echo '{"decision": "block"}'""", "allow", "The agent may stop."),
        ("Stop", "echo 'Cite the ticket.' >&2; exit 2", "block", "sent back to continue"),
        ("PreToolUse", "echo 'No.' >&2; exit 2", "block", "An agent would not make the call"),
        ("PostToolUse", "echo 'No.' >&2; exit 2", "block", "result from the model"),
        ("PreToolUse", "exit 0", "allow", "An agent would let this go on."),
    ],
)
def test_the_verdict_is_what_an_agent_would_do(
    admin_client, sre, eager, event, command, verdict, effect
):
    hook = {"type": "command", "command": command} | ({} if event == "Stop" else {"matcher": "*"})
    body = _post(admin_client, hook, sample_context(event, "sre"), event=event, **HTMX)
    text = body.content.decode()
    assert f'data-decision="{verdict}"' in text and effect in text
