"""The API document lists the runtime hook endpoint (an async view) and connect."""

from __future__ import annotations


def test_the_api_document_lists_the_hook_and_connect_endpoints(outsider_client):
    paths = outsider_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    hook = paths["/api/v1/hooks/{runtime}"]["post"]
    assert hook["parameters"][0]["schema"]["enum"] == [
        "claude-code",
        "codex",
        "gemini-cli",
        "cursor",
        "copilot",
    ]
    assert "get" in paths["/api/v1/connect/{runtime}"]
