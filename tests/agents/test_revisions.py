"""Configuration revisions: every change writes one revision and one governance event in the
same transaction; rollback restores a scope and is itself a new revision."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from django.db import IntegrityError, connection

from agents import services
from agents.models import Agent, ConfigRevision, CustomAgent, Hook
from agents.selectors import agent_level_hooks, custom_agent_as_document
from console.errors import Conflict, InvalidInput
from console.governance.models import GovernanceEvent
from demo.documents import SEED_CUSTOM_AGENT_YAML

STOP_PROMPT = {"type": "prompt", "prompt": "Finished?"}
POST_AUDIT = {"type": "command", "matcher": "*", "command": "exit 0"}


def _seed() -> dict[str, Any]:
    return yaml.safe_load(SEED_CUSTOM_AGENT_YAML)


def _counts() -> tuple[int, int]:
    return ConfigRevision.objects.count(), GovernanceEvent.objects.count()


def _hook(agent: Agent, custom_agent: CustomAgent | None = None) -> Hook:
    hook, _ = services.hook_create(
        actor=None, agent=agent, custom_agent=custom_agent, event="Stop", raw=dict(STOP_PROMPT)
    )
    return hook


def _second_hook(agent: Agent) -> Hook:
    hook, _ = services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=None,
        event="Stop",
        raw={"type": "prompt", "prompt": "Second?"},
    )
    return hook


CHANGES: dict[str, Callable[[Any, Any], object]] = {
    "agent_hooks_replace": lambda agent, actor: services.agent_hooks_replace(
        actor=actor, agent=agent, document={"hooks": {"Stop": [STOP_PROMPT]}}
    ),
    "agent_set_mode": lambda agent, actor: services.agent_set_mode(
        actor=actor, agent=agent, mode="evaluate_only"
    ),
    "hook_create": lambda agent, actor: services.hook_create(
        actor=actor, agent=agent, custom_agent=None, event="PostToolUse", raw=dict(POST_AUDIT)
    ),
    "hook_update": lambda agent, actor: services.hook_update(
        actor=actor, hook=_hook(agent), raw={"type": "prompt", "prompt": "Changed?"}
    ),
    "hook_set_enabled": lambda agent, actor: services.hook_set_enabled(
        actor=actor, hook=_hook(agent), enabled=False
    ),
    "hook_move": lambda agent, actor: services.hook_move(
        actor=actor, hook=(_hook(agent), _second_hook(agent))[1], offset=-1
    ),
    "hook_delete": lambda agent, actor: services.hook_delete(actor=actor, hook=_hook(agent)),
    "custom_agent_put": lambda agent, actor: services.custom_agent_put(
        actor=actor, agent=agent, name="my_hooked_agent", document=_seed()
    ),
    "custom_agent_create": lambda agent, actor: services.custom_agent_create(
        actor=actor, agent=agent, name="helper"
    ),
    "custom_agent_update": lambda agent, actor: services.custom_agent_update(
        actor=actor,
        custom_agent=services.custom_agent_create(actor=None, agent=agent, name="helper"),
        instructions="New.",
        handoff_description="",
        enable_vanilla_mode=True,
    ),
    "custom_agent_delete": lambda agent, actor: services.custom_agent_delete(
        actor=actor,
        custom_agent=services.custom_agent_create(actor=None, agent=agent, name="helper"),
    ),
    "revision_rollback": lambda agent, actor: services.revision_rollback(
        actor=actor, revision=ConfigRevision.objects.filter(agent=agent).earliest("number")
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_change_writes_one_revision_and_one_governance_event(alice, change):
    agent = services.agent_create(actor=None, slug="sre-agent")
    # The setup inside a change (a hook to edit, a custom agent to delete) has its own rows.
    setup_revisions = {
        "hook_update": 1,
        "hook_set_enabled": 1,
        "hook_move": 2,
        "hook_delete": 1,
        "custom_agent_update": 1,
        "custom_agent_delete": 1,
    }.get(change, 0)
    revisions, events = _counts()
    number = Agent.objects.get(pk=agent.pk).revision
    CHANGES[change](agent, alice)
    assert _counts() == (revisions + setup_revisions + 1, events + setup_revisions + 1)
    latest = ConfigRevision.objects.filter(agent=agent).latest("number")
    assert latest.number == number + setup_revisions + 1 == Agent.objects.get(pk=agent.pk).revision
    assert (latest.actor, latest.actor_label) == (alice, "alice")
    event = GovernanceEvent.objects.filter(agent=agent).order_by("-id").first()
    assert event is not None
    assert (event.actor, event.action) == (alice, latest.action)
    assert event.after["revision"] == latest.number


@pytest.mark.django_db
@pytest.mark.postgresql  # a PostgreSQL CHECK constraint makes the audit insert fail
def test_a_change_whose_governance_event_fails_leaves_nothing_behind(sre):
    services.agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": [STOP_PROMPT]}}
    )
    before_hooks = agent_level_hooks(sre.agent)
    revisions, events = _counts()
    number = Agent.objects.get(pk=sre.agent.pk).revision
    with connection.cursor() as cursor:
        # A real refusal by the database, rolled back with the test's transaction.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            "ALTER TABLE audit_governanceevent ADD CONSTRAINT refuse_hooks_replaced "
            "CHECK (action <> 'hooks.replaced') NOT VALID"
        )
    with pytest.raises(IntegrityError):
        services.agent_hooks_replace(
            actor=None, agent=sre.agent, document={"hooks": {"PostToolUse": [POST_AUDIT]}}
        )
    assert agent_level_hooks(sre.agent) == before_hooks
    assert _counts() == (revisions, events)
    assert Agent.objects.get(pk=sre.agent.pk).revision == number


@pytest.mark.django_db
def test_a_change_whose_revision_fails_leaves_nothing_behind(sre):
    document = _seed()
    services.custom_agent_put(
        actor=None, agent=sre.agent, name="my_hooked_agent", document=document
    )
    stored = custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent))
    revisions, events = _counts()
    # Take the revision number the next change would use, so writing its revision fails.
    taken = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    clash = copy.copy(taken)
    clash.pk = None
    clash.number = Agent.objects.get(pk=sre.agent.pk).revision + 1
    clash.save()
    changed = _seed()
    changed["spec"]["instructions"] = "Changed."
    changed["spec"]["hooks"] = {}
    with pytest.raises(IntegrityError):
        services.custom_agent_put(
            actor=None, agent=sre.agent, name="my_hooked_agent", document=changed
        )
    assert custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent)) == stored
    assert _counts() == (revisions + 1, events)


@pytest.mark.django_db
def test_revision_snapshot_is_the_scope_after_the_change(sre):
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())
    revision = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    assert revision.scope == ConfigRevision.Scope.CUSTOM_AGENT
    assert revision.custom_agent_name == "my_hooked_agent"
    assert revision.snapshot == custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent))


@pytest.mark.django_db
def test_rollback_restores_agent_level_hooks_and_mode(alice, sre):
    services.agent_hooks_replace(
        actor=alice, agent=sre.agent, document={"hooks": {"Stop": [STOP_PROMPT]}}
    )
    good = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    good_hooks = agent_level_hooks(sre.agent)
    services.agent_set_mode(actor=alice, agent=sre.agent, mode="evaluate_only")
    services.agent_hooks_replace(
        actor=alice, agent=sre.agent, document={"hooks": {"PostToolUse": [POST_AUDIT]}}
    )
    assert agent_level_hooks(sre.agent) != good_hooks

    restored = services.revision_rollback(actor=alice, revision=good)

    agent = Agent.objects.get(pk=sre.agent.pk)
    assert agent_level_hooks(agent) == good_hooks
    assert agent.mode == "enforce"
    assert restored.action == "revision.rolled_back"
    assert restored.number == agent.revision > good.number
    assert restored.snapshot == {"mode": "enforce", "hooks": good_hooks}
    assert GovernanceEvent.objects.filter(action="revision.rolled_back", actor=alice).count() == 1


@pytest.mark.django_db
def test_rollback_restores_disabled_hooks_as_disabled(sre):
    hook = _hook(sre.agent)
    services.hook_set_enabled(actor=None, hook=hook, enabled=False)
    disabled = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    services.hook_set_enabled(actor=None, hook=Hook.objects.get(pk=hook.pk), enabled=True)
    services.revision_rollback(actor=None, revision=disabled)
    assert Hook.objects.get(agent=sre.agent).enabled is False


@pytest.mark.django_db
def test_rollback_restores_custom_agent_content(sre):
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())
    first = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    original = custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent))
    changed = _seed()
    changed["spec"]["instructions"] = "Something else."
    changed["spec"]["enableVanillaMode"] = False
    del changed["spec"]["hooks"]["Stop"]
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=changed)

    restored = services.revision_rollback(actor=None, revision=first)

    assert custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent)) == original
    assert restored.number > first.number
    assert restored.custom_agent_name == "my_hooked_agent"


@pytest.mark.django_db
def test_rollback_of_a_deletion_brings_the_custom_agent_back(sre):
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())
    before_delete = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    original = custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent))
    services.custom_agent_delete(actor=None, custom_agent=CustomAgent.objects.get(agent=sre.agent))
    deletion = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    assert deletion.snapshot == {"deleted": True}
    assert not CustomAgent.objects.exists()

    services.revision_rollback(actor=None, revision=before_delete)

    assert custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent)) == original
    assert Hook.objects.filter(custom_agent__isnull=False).count() == 2


@pytest.mark.django_db
def test_rollback_to_a_deletion_deletes_again(sre):
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())
    services.custom_agent_delete(actor=None, custom_agent=CustomAgent.objects.get(agent=sre.agent))
    deletion = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())

    restored = services.revision_rollback(actor=None, revision=deletion)

    assert not CustomAgent.objects.exists()
    assert not Hook.objects.filter(custom_agent__isnull=False).exists()
    assert restored.snapshot == {"deleted": True}


@pytest.mark.django_db
def test_rollback_touches_only_its_own_scope(sre):
    services.agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": [STOP_PROMPT]}}
    )
    agent_revision = ConfigRevision.objects.filter(agent=sre.agent).latest("number")
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())
    custom = custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent))
    services.agent_hooks_replace(actor=None, agent=sre.agent, document={"hooks": {}})

    services.revision_rollback(actor=None, revision=agent_revision)

    assert custom_agent_as_document(CustomAgent.objects.get(agent=sre.agent)) == custom
    assert list(agent_level_hooks(sre.agent)) == ["Stop"]


@pytest.mark.django_db
def test_hook_keys_stay_stable_when_a_put_keeps_hooks_in_their_slots(sre):
    document = _seed()
    services.custom_agent_put(
        actor=None, agent=sre.agent, name="my_hooked_agent", document=document
    )
    keys = dict(Hook.objects.values_list("event", "key"))
    document["spec"]["hooks"]["PostToolUse"][0]["timeout"] = 45
    document["spec"]["hooks"]["Stop"][0]["prompt"] = "Reworded."
    document["spec"]["hooks"]["PostToolUse"].append(dict(POST_AUDIT))
    services.custom_agent_put(
        actor=None, agent=sre.agent, name="my_hooked_agent", document=document
    )

    rows = list(Hook.objects.order_by("event", "position"))
    by_slot = {(row.event, row.position): row.key for row in rows}
    assert by_slot[("Stop", 0)] == keys["Stop"]
    assert by_slot[("PostToolUse", 0)] == keys["PostToolUse"]
    assert by_slot[("PostToolUse", 1)] not in keys.values()
    assert Hook.objects.get(key=keys["PostToolUse"]).definition["timeout"] == 45


@pytest.mark.django_db
def test_agent_level_hook_keys_stay_stable_across_a_put(sre):
    services.agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": [STOP_PROMPT]}}
    )
    key = Hook.objects.get().key
    services.agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": [{"prompt": "Changed."}]}}
    )
    assert Hook.objects.get().key == key


@pytest.mark.django_db
def test_setting_the_same_mode_again_writes_nothing(sre):
    revisions, events = _counts()
    services.agent_set_mode(actor=None, agent=sre.agent, mode="enforce")
    assert _counts() == (revisions, events)


@pytest.mark.django_db
def test_unknown_mode_is_refused(sre):
    with pytest.raises(InvalidInput) as refused:
        services.agent_set_mode(actor=None, agent=sre.agent, mode="audit")
    assert list(refused.value.fields) == ["/mode"]


def _concurrently(
    work: Callable[[int, int], object], *, threads: int = 3, rounds: int = 10
) -> list[str]:
    """Run `work(thread, round)` from several threads at once; return the errors raised."""
    errors: list[str] = []
    barrier = threading.Barrier(threads)

    def run(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            for i in range(rounds):
                work(n, i)
        except Exception as exc:  # collected for the assertion below
            errors.append(repr(exc))
        finally:
            connection.close()

    pool = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in pool)
    return errors


@pytest.mark.django_db(transaction=True)
def test_concurrent_replacements_of_agent_hooks_are_serialized(sre):
    def replace(n: int, i: int) -> None:
        services.agent_hooks_replace(
            actor=None,
            agent=sre.agent,
            document={"hooks": {"Stop": [{"prompt": f"{n}/{i}"}], "PostToolUse": [POST_AUDIT]}},
        )

    assert _concurrently(replace) == []
    assert Hook.objects.filter(agent=sre.agent).count() == 2
    numbers = list(ConfigRevision.objects.filter(agent=sre.agent).values_list("number", flat=True))
    assert sorted(numbers) == list(range(1, len(numbers) + 1))
    assert Agent.objects.get(pk=sre.agent.pk).revision == len(numbers) == 1 + 3 * 10


@pytest.mark.django_db(transaction=True)
def test_concurrent_puts_and_hook_moves_neither_fail_nor_deadlock(sre):
    services.custom_agent_put(actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed())
    _hook(sre.agent)
    _second_hook(sre.agent)

    def mixed(n: int, i: int) -> None:
        if n == 0:
            services.custom_agent_put(
                actor=None, agent=sre.agent, name="my_hooked_agent", document=_seed()
            )
        elif n == 1:
            hook = Hook.objects.filter(agent=sre.agent, custom_agent=None).order_by("position")
            try:
                services.hook_move(actor=None, hook=hook.last(), offset=-1)
            except Conflict as refused:
                # Replaced between the read and the lock: refused by name, not a crash.
                assert list(refused.fields) == ["/key"]
        else:
            services.agent_hooks_replace(
                actor=None,
                agent=sre.agent,
                document={"hooks": {"Stop": [STOP_PROMPT, {"prompt": f"{i}"}]}},
            )

    assert _concurrently(mixed) == []
    assert Hook.objects.filter(agent=sre.agent, custom_agent=None).count() == 2
    assert Hook.objects.filter(custom_agent__name="my_hooked_agent").count() == 2


@pytest.mark.django_db
def test_editing_a_hook_that_was_replaced_meanwhile_is_refused(sre):
    stale = _hook(sre.agent)
    services.agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": [{"prompt": "New."}]}}
    )
    revisions, events = _counts()
    for change in (
        lambda: services.hook_update(actor=None, hook=stale, raw={"prompt": "Mine."}),
        lambda: services.hook_set_enabled(actor=None, hook=stale, enabled=False),
        lambda: services.hook_move(actor=None, hook=stale, offset=1),
        lambda: services.hook_delete(actor=None, hook=stale),
    ):
        with pytest.raises(Conflict) as refused:
            change()
        assert "changed meanwhile" in refused.value.fields["/key"][0]
    assert _counts() == (revisions, events)
    assert Hook.objects.get(agent=sre.agent).definition["prompt"] == "New."
