"""Hook inputs of other agent runtimes, copied from their documentation and from what the
real clients sent here (/work/shared/reference/agent-runtime-hooks.md), and helpers to post
them to `POST /api/v1/hooks/{runtime}`."""

from __future__ import annotations

import copy
import json
from typing import Any

from django.test import Client

from agents import services as agent_services
from agents.models import Hook
from tests.conftest import AgentWithToken

SESSION = "9f1c2d7e-4b7a-4c1e-9a55-2f1d3c4b5a6e"
CWD = "/home/dev/project"

# Claude Code 2.1 PreToolUse, as observed from the real client (fields and shapes).
CLAUDE_PRE = {
    "session_id": SESSION,
    "transcript_path": f"/home/dev/.claude/projects/-home-dev-project/{SESSION}.jsonl",
    "cwd": CWD,
    "prompt_id": "7a1b2c3d-0000-4000-8000-000000000001",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {
        "command": "npm test",
        "description": "Run the tests",
        "timeout": 120000,
        "run_in_background": False,
    },
    "tool_use_id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV",
}
CLAUDE_POST = {
    **{k: v for k, v in CLAUDE_PRE.items() if k != "hook_event_name"},
    "hook_event_name": "PostToolUse",
    "tool_response": {"stdout": "all 12 tests passed", "stderr": "", "interrupted": False},
    "duration_ms": 812,
}
CLAUDE_STOP = {
    "session_id": SESSION,
    "transcript_path": CLAUDE_PRE["transcript_path"],
    "cwd": CWD,
    "permission_mode": "default",
    "hook_event_name": "Stop",
    "stop_hook_active": False,
    "last_assistant_message": "I restarted the service.",
}
CLAUDE_SESSION_START = {
    "session_id": SESSION,
    "transcript_path": CLAUDE_PRE["transcript_path"],
    "cwd": CWD,
    "hook_event_name": "SessionStart",
    "source": "startup",
}


def payload(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def post_hook(
    client: Client,
    agent: AgentWithToken | None,
    runtime: str,
    body: Any,
    *,
    query: str = "",
    raw: bytes | None = None,
) -> Any:
    headers = agent.headers() if agent is not None else {}
    return client.post(
        f"/api/v1/hooks/{runtime}{query}",
        data=raw if raw is not None else json.dumps(body),
        content_type="application/json",
        **headers,
    )


def add_hook(
    agent: AgentWithToken, event: str, raw: dict[str, Any], custom_agent: Any = None
) -> Hook:
    hook, _warnings = agent_services.hook_create(
        actor=None, agent=agent.agent, custom_agent=custom_agent, event=event, raw=raw
    )
    return hook


BLOCK_RM_RF = {
    "type": "command",
    "matcher": "Bash",
    "script": (
        "#!/usr/bin/env python3\n"
        "import json, re, sys\n"
        "ctx = json.load(sys.stdin)\n"
        "command = ctx.get('tool_input', {}).get('command', '')\n"
        "if re.search(r'\\brm\\s+-rf\\b', command):\n"
        "    print('rm -rf is not allowed here; delete files one by one.', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    ),
}
AUDIT_CONTEXT = {
    "type": "command",
    "matcher": "*",
    "script": (
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "ctx = json.load(sys.stdin)\n"
        "print(json.dumps({'decision': 'allow', 'hookSpecificOutput': {"
        "'additionalContext': f\"[AUDIT] Tool '{ctx['tool_name']}' was executed.\"}}))\n"
    ),
}
STOP_TASK_COMPLETE = {
    "type": "command",
    "command": (
        "jq -e '.final_output | endswith(\"Task complete.\")' >/dev/null "
        "|| { echo \"Please end your response with 'Task complete.'\" >&2; exit 2; }"
    ),
}
