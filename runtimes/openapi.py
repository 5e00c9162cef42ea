"""OpenAPI for `POST /api/v1/hooks/{runtime}` (an async view drf-spectacular cannot see)."""

from __future__ import annotations

from typing import Any

from console_client.runtimes import RUNTIMES

HOOK_PATH = "/api/v1/hooks/{runtime}"
# Claude Code's PreToolUse input, as the real client sends it.
CLAUDE_CODE_PRE_TOOL_USE = {
    "session_id": "9f1c2d7e-4b7a-4c1e-9a55-2f1d3c4b5a6e",
    "transcript_path": "/home/dev/.claude/projects/p/9f1c2d7e.jsonl",
    "cwd": "/home/dev/project",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "npm test", "description": "Run the tests"},
    "tool_use_id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV",
}
RUNTIME_PARAMETER = {
    "name": "runtime",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "enum": list(RUNTIMES)},
    "example": "claude-code",
}


def document_runtime_hooks(result: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS: the runtime hook endpoint
    (`POST /api/v1/hooks/{runtime}`), whose body is each runtime's own hook input."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    anything = {"application/json": {"schema": {"type": "object", "additionalProperties": True}}}
    result["paths"][HOOK_PATH] = {
        "post": {
            "operationId": "v1_hooks_runtime",
            "summary": "Evaluate an agent runtime's hook event with this agent's hooks",
            "description": (
                "The body is the runtime's own hook input, verbatim (Claude Code, Codex CLI, "
                "Gemini CLI, Cursor, GitHub Copilot); the answer is the runtime's own hook "
                "output (`{}`: no objection). An approval hook holds the request open until "
                "the reviewers decide or the escalation expires. Agent tokens only. See the "
                "README, 'Other agent runtimes', for the mapping per runtime."
            ),
            "tags": ["v1"],
            "parameters": [
                RUNTIME_PARAMETER,
                {
                    "name": "custom_agent",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "Evaluate this custom agent's hooks after the agent's.",
                },
                {
                    "name": "event",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "The event, for inputs that do not name it (Copilot).",
                },
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"type": "object", "additionalProperties": True},
                        "examples": {"claude-code PreToolUse": {"value": CLAUDE_CODE_PRE_TOOL_USE}},
                    }
                },
            },
            "security": [{"bearerToken": []}],
            "responses": {
                "200": {"description": "The runtime's hook output.", "content": anything},
                "400": {
                    "description": "invalid or malformed: not this runtime's input",
                    "content": error,
                },
                "404": {
                    "description": "not_found: an unknown runtime or custom agent",
                    "content": error,
                },
            },
        }
    }
    connect = result["paths"].get("/api/v1/connect/{runtime}", {}).get("get")
    if connect is not None:
        for parameter in connect.get("parameters", []):
            if parameter.get("in") == "path" and parameter.get("name") == "runtime":
                parameter.update(RUNTIME_PARAMETER)
            elif parameter.get("name") == "agent":
                parameter["example"] = "sre-agent"
    result["paths"] = dict(sorted(result["paths"].items()))
    return result
