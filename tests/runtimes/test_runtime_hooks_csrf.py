"""The runtimes post hook events with an agent token and no CSRF token (Claude Code's `http`
hooks, console-hook): the endpoint must not ask for one. (Found by the real Claude Code in
tests/reach_clients: a 403 there, and its `onFailure: "block"` blocked every call.)"""

from __future__ import annotations

from django.test import Client

from tests.runtimes.runtime_support import CLAUDE_PRE, post_hook


def test_the_hook_endpoint_answers_an_agent_token_post_that_carries_no_csrf_token(sre):
    response = post_hook(Client(enforce_csrf_checks=True), sre, "claude-code", CLAUDE_PRE)

    assert response.status_code == 200, response.content
    assert response.json() == {}
