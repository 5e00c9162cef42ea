"""Migration 0003 names the hooks that existed before names: event and matcher (or type),
numbered where a scope repeats one, unique per scope."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("agents", "0002_runtime_session")]
AFTER = [("agents", "0003_hook_name_mode")]


@pytest.mark.django_db(transaction=True)
def test_existing_hooks_are_named_from_event_and_matcher_per_scope():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Agent, CustomAgent, Hook = (
        old.get_model("agents", m) for m in ("Agent", "CustomAgent", "Hook")
    )
    agent = Agent.objects.create(slug="legacy")
    custom = CustomAgent.objects.create(agent=agent, name="ops")
    command = {"type": "command", "command": "true"}
    rows = [
        (None, "PreToolUse", 0, {**command, "matcher": "restart_service"}),
        (None, "PreToolUse", 1, {**command, "matcher": "restart_service"}),
        (None, "PostToolUse", 0, {**command, "matcher": "*"}),
        (None, "Stop", 0, {"type": "prompt", "prompt": "ok?"}),
        (custom, "PreToolUse", 0, {**command, "matcher": "restart_service"}),
    ]
    for index, (scope, event, position, definition) in enumerate(rows):
        Hook.objects.create(
            key=f"hk_00000000000{index}",
            agent=agent,
            custom_agent=scope,
            event=event,
            position=position,
            definition=definition,
        )
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("agents", "Hook")
    names = dict(new.objects.values_list("key", "name"))
    assert names == {
        "hk_000000000000": "PreToolUse restart_service",
        "hk_000000000001": "PreToolUse restart_service 2",
        "hk_000000000002": "PostToolUse all tools",
        "hk_000000000003": "Stop prompt",
        "hk_000000000004": "PreToolUse restart_service",
    }
    assert set(new.objects.values_list("mode", flat=True)) == {"enforce"}
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())
