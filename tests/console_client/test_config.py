"""Declaration loading: from the console, from the last good copy, or not at all."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import Hook
from console_client import ConsoleConfigError, ConsoleHooks
from tests.console_client.scripted_http import ScriptedHTTP

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_declaration_is_loaded_and_cached(governed):
    gov = governed({"PostToolUse": [{"type": "command", "matcher": "*", "command": "exit 0"}]})
    hooks = gov.hooks()
    assert hooks.declaration.source == "console"
    assert hooks.declaration.agent == "sre-agent"
    assert hooks.declaration.revision == gov.agent.revision
    assert len(list((gov.root / "cache" / "declarations").rglob("_agent.json"))) == 1


def test_without_console_the_last_good_copy_is_used(governed, live_console, tmp_path):
    gov = governed()
    gov.hooks()  # caches
    down = ScriptedHTTP().start()
    down.route("GET", "/api/v1/declaration", (503, {"error": "down"}))
    try:
        # Same console URL and token (the cache key), but the console now fails.
        cache_file = next((gov.root / "cache" / "declarations").rglob("_agent.json"))
        target = cache_file.parent.parent / _scope(down.url, gov.token)
        target.mkdir(parents=True)
        (target / "_agent.json").write_bytes(cache_file.read_bytes())
        hooks = ConsoleHooks(down.url, gov.token, cache_dir=gov.root / "cache")
    finally:
        down.stop()
    assert hooks.declaration.source == "cache"
    assert hooks.declaration.agent == "sre-agent"


def _scope(url: str, token: str) -> str:
    import hashlib

    return hashlib.sha256(f"{url}\n{token}".encode()).hexdigest()[:16]


def test_no_console_and_no_cache_refuses_to_run(tmp_path):
    with pytest.raises(ConsoleConfigError, match="refuses to run ungoverned"):
        ConsoleHooks("http://127.0.0.1:9", "agt_x", cache_dir=tmp_path)


def test_a_document_that_does_not_load_is_refused_and_not_cached(tmp_path):
    server = ScriptedHTTP().start()
    server.route(
        "GET",
        "/api/v1/declaration",
        (200, {"declaration": "agent-hooks-declaration/9.0", "bindings": []}),
    )
    try:
        with pytest.raises(ConsoleConfigError, match="does not load"):
            ConsoleHooks(server.url, "agt_x", cache_dir=tmp_path)
    finally:
        server.stop()
    assert not list(tmp_path.rglob("*.json"))


def test_an_unknown_custom_agent_is_a_clear_error(governed):
    gov = governed()
    with pytest.raises(ConsoleConfigError, match="no custom agent 'nope'"):
        gov.hooks("nope")


async def test_refresh_uses_the_etag_and_picks_up_changes(governed):
    gov = governed()
    hooks = gov.hooks()
    assert await hooks.refresh() is False  # 304
    services.agent_hooks_replace(
        actor=None,
        agent=gov.agent,
        document={"hooks": {"Stop": [{"type": "command", "command": "exit 0"}]}},
    )
    assert await hooks.refresh() is True
    kinds = [binding["kind"] for binding in hooks.declaration.document["bindings"]]
    assert kinds == ["console.base", "console.command"]


def test_a_stored_matcher_the_agent_cannot_evaluate_refuses_the_declaration(governed):
    """A matcher saved before matchers were RE2 (lookahead here) would match nothing on the
    agent, silently switching its hook off: the agent refuses the document instead."""
    gov = governed({"PreToolUse": [{"type": "command", "matcher": "Bash", "command": "exit 2"}]})
    hook = Hook.objects.get(agent=gov.agent)
    Hook.objects.filter(pk=hook.pk).update(definition={**hook.definition, "matcher": "(?!Read).*"})
    with pytest.raises(ConsoleConfigError, match="does not compile as RE2"):
        gov.hooks()
    assert not list((gov.root / "cache").rglob("*.json"))
