"""GET /api/v1/connect/{runtime}: the ready hook settings of each runtime for one agent."""

from __future__ import annotations

import tomllib

import pytest

from agents import services as agent_services
from tests.runtimes.runtime_support import BLOCK_RM_RF, add_hook


def connect(client, agent, runtime, query=""):
    return client.get(f"/api/v1/connect/{runtime}{query}", **agent.headers())


def test_claude_code_settings_call_the_console_with_the_token_and_block_on_failure(client, sre):
    response = connect(client, sre, "claude-code")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    hooks = response.json()["hooks"]
    assert set(hooks) == {"PreToolUse", "PostToolUse", "Stop"}
    handler = hooks["PreToolUse"][0]["hooks"][0]
    assert hooks["PreToolUse"][0]["matcher"] == "*"
    assert handler == {
        "type": "http",
        "url": "http://testserver/api/v1/hooks/claude-code",
        "headers": {"Authorization": "Bearer $CONSOLE_TOKEN"},
        "allowedEnvVars": ["CONSOLE_TOKEN"],
        "timeout": 30,
        "onFailure": "block",
    }


def test_the_pre_tool_timeout_follows_the_approval_hooks_expiry(client, sre):
    add_hook(sre, "PreToolUse", {"type": "approval", "matcher": "Bash", "expiresIn": 900})
    add_hook(sre, "Stop", {"type": "command", "command": "exit 0", "timeout": 45})
    hooks = connect(client, sre, "claude-code").json()["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["timeout"] == 910
    assert hooks["PostToolUse"][0]["hooks"][0]["timeout"] == 30
    assert hooks["Stop"][0]["hooks"][0]["timeout"] == 55


def test_a_command_hook_that_could_ask_waits_the_default_expiry(client, sre, settings):
    settings.CONSOLE_DEFAULT_ESCALATION_SECONDS = 120
    add_hook(sre, "PreToolUse", BLOCK_RM_RF)
    hooks = connect(client, sre, "claude-code").json()["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["timeout"] == 30 + 120 + 10


def test_the_managed_form_allows_managed_hooks_only_and_pins_the_url(client, sre):
    body = connect(client, sre, "claude-code", "?form=managed").json()
    assert body["allowManagedHooksOnly"] is True
    assert body["allowedHttpHookUrls"] == ["http://testserver/api/v1/hooks/*"]
    assert body["hooks"]["PreToolUse"][0]["hooks"][0]["type"] == "http"


def test_a_custom_agent_is_named_in_the_hook_url(client, sre):
    agent_services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    hooks = connect(client, sre, "claude-code", "?custom_agent=triage").json()["hooks"]
    url = hooks["Stop"][0]["hooks"][0]["url"]
    assert url == "http://testserver/api/v1/hooks/claude-code?custom_agent=triage"


def test_codex_hooks_run_console_hook_for_the_custom_agent(client, sre):
    agent_services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    hooks = connect(client, sre, "codex", "?custom_agent=triage").json()["hooks"]
    handler = hooks["PreToolUse"][0]["hooks"][0]
    assert handler["type"] == "command"
    assert handler["command"] == "console-hook codex --custom-agent triage --timeout 30 || exit 2"
    assert handler["timeout"] == 35


def test_codex_config_toml_holds_the_same_hooks(client, sre):
    as_json = connect(client, sre, "codex").json()
    response = connect(client, sre, "codex", "?form=config")
    assert response["Content-Type"].startswith("application/toml")
    assert tomllib.loads(response.content.decode())["hooks"] == as_json["hooks"]


def test_gemini_settings_use_milliseconds_and_gemini_event_names(client, sre):
    hooks = connect(client, sre, "gemini-cli").json()["hooks"]
    assert set(hooks) == {"BeforeTool", "AfterTool", "AfterAgent"}
    handler = hooks["BeforeTool"][0]["hooks"][0]
    assert handler["timeout"] == 35_000
    assert handler["command"].startswith("console-hook gemini-cli ")


@pytest.mark.parametrize(
    ("runtime", "pre", "others"),
    [
        ("codex", "PreToolUse", ("PostToolUse", "Stop")),
        ("gemini-cli", "BeforeTool", ("AfterTool", "AfterAgent")),
    ],
)
def test_a_console_hook_that_cannot_run_blocks_tools_and_lets_the_rest_through(
    client, sre, runtime, pre, others
):
    # The shell's exit (127 when console-hook is missing) is what the runtime reads: only 2
    # blocks a tool, and Gemini CLI would loop on a failing AfterAgent.
    hooks = connect(client, sre, runtime).json()["hooks"]
    assert hooks[pre][0]["hooks"][0]["command"].endswith(" || exit 2")
    for event in others:
        assert hooks[event][0]["hooks"][0]["command"].endswith(" || true")


def test_cursor_and_copilot_files(client, sre):
    cursor = connect(client, sre, "cursor").json()
    assert cursor["version"] == 1
    assert cursor["hooks"]["beforeShellExecution"][0]["command"].startswith("console-hook cursor")
    copilot = connect(client, sre, "copilot").json()
    assert copilot["version"] == 1
    pre = copilot["hooks"]["preToolUse"][0]
    assert pre["bash"].startswith("console-hook copilot --event preToolUse --timeout 30 || ")
    assert pre["timeoutSec"] == 35


def test_download_is_an_attachment(client, sre):
    response = connect(client, sre, "claude-code", "?download=1")
    assert response["Content-Disposition"] == 'attachment; filename="settings.json"'


def test_admins_name_the_agent(admin_client, sre):
    assert admin_client.get("/api/v1/connect/claude-code").status_code == 400
    response = admin_client.get("/api/v1/connect/claude-code?agent=sre-agent")
    assert response.status_code == 200 and "hooks" in response.json()


@pytest.mark.parametrize(
    ("query", "runtime", "status", "pointer"),
    [
        ("", "windsurf", 404, "/runtime"),
        ("?form=yaml", "claude-code", 400, "/form"),
    ],
)
def test_bad_runtime_or_form_is_refused_naming_it(client, sre, query, runtime, status, pointer):
    response = connect(client, sre, runtime, query)
    assert response.status_code == status
    assert pointer in response.json()["error"]["fields"]


def test_another_agents_custom_agent_is_404(client, sre, other):
    agent_services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    assert connect(client, other, "claude-code", "?custom_agent=triage").status_code == 404


def test_reviewers_cannot_read_connect_settings(reviewer_client):
    assert reviewer_client.get("/api/v1/connect/claude-code?agent=sre-agent").status_code == 403
