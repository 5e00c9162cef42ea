"""OpenAPI for `POST /api/v1/hooks/{runtime}` (an async view drf-spectacular cannot see)."""

from __future__ import annotations

from typing import Any

from console_client.runtimes import RUNTIMES

HOOK_PATH = "/api/v1/hooks/{runtime}"


def document_runtime_hooks(result: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS: the runtime hook endpoint (DESIGN §6)."""
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
                {
                    "name": "runtime",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "enum": list(RUNTIMES)},
                },
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
            "requestBody": {"required": True, "content": anything},
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
    result["paths"] = dict(sorted(result["paths"].items()))
    return result
