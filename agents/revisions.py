"""How a configuration write is recorded, for every service of agents.services: under the
agent's row lock, the agent's revision bumped, the changed scope's snapshot stored as a
`ConfigRevision` and a governance event written, all in the caller's transaction; and a
scope's hooks replaced keeping each hook's stable key (by name, else by slot); a hook's
name checked against its scope.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.utils import timezone

from agents.governance_changes import revision_changes
from agents.hook_names import check_name_unique, with_names
from agents.models import Agent, ConfigRevision, CustomAgent, Hook, new_hook_key
from agents.selectors import revisions_for_scope, scope_snapshot
from agents.validation import CUSTOM_AGENTS_MAX, CustomAgentDocument, HookInput, Problems
from console.actors import Actor, actor_label, actor_user
from console.errors import Conflict, InvalidInput
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record


def record_change(
    *,
    actor: Actor | None,
    agent: Agent,
    custom_agent_name: str = "",
    action: GovernanceAction,
    summary: str,
    target: Any = None,
    deleted: bool = False,
) -> ConfigRevision:
    """Bump the agent's revision and write the scope's snapshot and the governance event."""
    Agent.objects.filter(pk=agent.pk).update(revision=F("revision") + 1, updated_at=timezone.now())
    agent.refresh_from_db(fields=["revision", "updated_at"])
    scope = ConfigRevision.Scope.CUSTOM_AGENT if custom_agent_name else ConfigRevision.Scope.AGENT
    snapshot = None if deleted else scope_snapshot(agent, custom_agent_name or None)
    previous = (
        revisions_for_scope(agent, custom_agent_name)
        .order_by("-number")
        .values_list("snapshot", flat=True)
        .first()
    )
    revision = ConfigRevision.objects.create(
        agent=agent,
        scope=scope,
        custom_agent_name=custom_agent_name,
        number=agent.revision,
        action=action,
        summary=summary[:300],
        snapshot={"deleted": True} if deleted else snapshot,
        actor=actor_user(actor),
        actor_label=actor_label(actor),
    )
    governance_event_record(
        actor=actor,
        action=action,
        summary=summary,
        agent=agent,
        target=target if target is not None else revision,
        after={"revision": revision.number, "custom_agent": custom_agent_name or None},
        changes=revision_changes(previous, snapshot, custom_agent=bool(custom_agent_name)),
    )
    return revision


def lock_agent(agent: Agent) -> None:
    """Serialize configuration writes per agent: every write takes the agent row first, so
    concurrent replacements cannot interleave (hook keys are unique) or deadlock."""
    Agent.objects.select_for_update().filter(pk=agent.pk).values_list("pk", flat=True).first()


def lock_hook(hook: Hook) -> None:
    """Take the agent lock, then reload `hook`; a replacement keeps keys but not rows, so a
    hook replaced or deleted meanwhile is refused rather than written blind."""
    lock_agent(hook.agent)
    try:
        hook.refresh_from_db()
    except Hook.DoesNotExist:
        raise Conflict(
            "The hook changed meanwhile.",
            fields={"/key": [f"Hook {hook.key} changed meanwhile; reload and retry."]},
        ) from None


def refuse_past_custom_agent_limit(agent: Agent, at: str) -> None:
    """Call with the agent lock held, before a write that would add a custom agent."""
    count = CustomAgent.objects.filter(agent=agent).count()
    if count >= CUSTOM_AGENTS_MAX:
        message = f"{agent.slug} has {count} custom agents; the limit is {CUSTOM_AGENTS_MAX}."
        raise InvalidInput("Too many custom agents.", fields={at: [message]})


def replace_hooks(
    agent: Agent, custom_agent: CustomAgent | None, hooks: list[HookInput], *, actor: str = ""
) -> None:
    """Replace a scope's hooks (named: `validate_hooks_map` fills names). A hook keeps its
    stable key when a hook of the same event had its name, else its slot (event, index),
    so records stay attributed to the hook across renames and reorders. A hook that records
    its reason keeps who opted it in; one newly opted in is opted in by `actor`."""
    existing = list(
        Hook.objects.filter(agent=agent, custom_agent=custom_agent).order_by("event", "position")
    )
    opted_in_by = {hook.key: hook.record_reason_by for hook in existing if hook.record_reason}
    keys_by_name = {(hook.event, hook.name.lower()): hook.key for hook in existing}
    keys_by_slot: dict[tuple[str, int], str] = {}
    counters: dict[str, int] = {}
    for hook in existing:
        index = counters.get(hook.event, 0)
        keys_by_slot[(hook.event, index)] = hook.key
        counters[hook.event] = index + 1
    Hook.objects.filter(agent=agent, custom_agent=custom_agent).delete()
    positions: dict[str, int] = {}
    rows = []
    for item in hooks:
        position = positions.get(item.event, 0)
        positions[item.event] = position + 1
        row = Hook(
            agent=agent,
            custom_agent=custom_agent,
            event=item.event,
            position=position,
            enabled=item.enabled,
            definition=item.definition,
            name=item.name,
            description=item.description,
            mode=item.mode,
            record_reason=item.record_reason,
        )
        row.key = keys_by_name.get((item.event, item.name.lower()), "")
        rows.append(row)
    used = {row.key for row in rows if row.key}
    for row in rows:
        slot_key = keys_by_slot.get((row.event, row.position))
        if not row.key and slot_key and slot_key not in used:
            row.key = slot_key
            used.add(slot_key)
        row.key = row.key or new_hook_key()
        if row.record_reason:
            row.record_reason_by = opted_in_by.get(row.key) or actor
    Hook.objects.bulk_create(rows)


def write_custom_agent(
    agent: Agent, name: str, parsed: CustomAgentDocument, actor: str, *, at: str
) -> tuple[CustomAgent, bool]:
    """Create or update custom agent `name` as `parsed` says (settings and hooks); a new one
    past the limit is refused on `at`. Call with the agent lock held."""
    if not CustomAgent.objects.filter(agent=agent, name=name).exists():
        refuse_past_custom_agent_limit(agent, at)
    custom_agent, created = CustomAgent.objects.select_for_update().get_or_create(
        agent=agent, name=name
    )
    custom_agent.instructions = parsed.instructions
    custom_agent.handoff_description = parsed.handoff_description
    custom_agent.enable_vanilla_mode = parsed.enable_vanilla_mode
    custom_agent.save(update_fields=["instructions", "handoff_description", "enable_vanilla_mode"])
    replace_hooks(agent, custom_agent, parsed.hooks, actor=actor)
    return custom_agent, created


def named_in_scope(
    hook_input: HookInput, *, agent: Agent, custom_agent: CustomAgent | None, hook: Hook | None
) -> HookInput:
    """`hook_input` with its name checked against the scope's other hooks (a 400 naming
    `/name`), or derived when it has none. Call with the agent lock held."""
    others = Hook.objects.filter(agent=agent, custom_agent=custom_agent)
    if hook is not None:
        others = others.exclude(pk=hook.pk)
    taken = {name.lower(): key for name, key in others.values_list("name", "key")}
    problems = Problems()
    check_name_unique(hook_input.name, "/name", dict(taken), problems)
    if problems.errors:
        raise problems.refusal("The hook's name is taken.")
    return with_names([hook_input], taken)[0]


HOOK_IDENTITY_FIELDS = ("name", "description", "mode", "record_reason", "record_reason_by")


def set_record_reason(hook: Hook, wanted: bool, actor: str) -> None:
    """Opt the hook in to (or out of) recording its reason; turning it on notes who did."""
    if wanted and not hook.record_reason:
        hook.record_reason_by = actor
    hook.record_reason = wanted


def hook_label(hook: Hook) -> str:
    """How governance summaries name a hook: its name, and its key for the records."""
    return f"“{hook.name}” ({hook.key})"
