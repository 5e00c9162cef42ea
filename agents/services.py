"""Every write of the agents app. Each change validates first, then writes the change, a
configuration revision and a governance event in one transaction (agents.revisions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Max
from django.utils import timezone

from agents.config_review import refuse_if_moved, revision_content, validate_named_document
from agents.governance_changes import settings_changes
from agents.models import Agent, AgentToken, ConfigRevision, CustomAgent, Event, Hook, Mode
from agents.revisions import (
    HOOK_IDENTITY_FIELDS,
    hook_label,
    lock_agent,
    lock_hook,
    named_in_scope,
    record_change,
    refuse_past_custom_agent_limit,
    replace_hooks,
    set_record_reason,
    write_custom_agent,
)
from agents.validation import (
    AGENT_DESCRIPTION_MAX_CHARS,
    HOOKS_PER_EVENT_MAX,
    Problems,
    validate_custom_agent_text,
    validate_hook,
    validate_hooks_map,
    validate_name,
)
from console.actors import Actor, actor_label
from console.errors import InvalidInput, pointer
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record
from console.outbound import webhook_url_problems
from console.tokens import AGENT_TOKEN_KIND, token_generate


@dataclass(frozen=True)
class IssuedToken:
    token: AgentToken
    plaintext: str


def _scope_label(custom_agent: CustomAgent | None) -> str:
    return f"custom agent {custom_agent.name}" if custom_agent else "agent level"


@transaction.atomic
def agent_create(
    *, actor: Actor | None, slug: str, display_name: str = "", description: str = ""
) -> Agent:
    problems = Problems()
    validate_name(slug, "/slug", problems)
    if not problems.errors and Agent.objects.filter(slug=slug).exists():
        problems.error("/slug", f"An agent named {slug!r} already exists.")
    if problems.errors:
        raise problems.refusal("The agent is invalid.")
    agent = Agent.objects.create(slug=slug, display_name=display_name, description=description)
    record_change(
        actor=actor,
        agent=agent,
        action=GovernanceAction.AGENT_CREATED,
        summary=f"Created agent {slug}",
        target=agent,
    )
    return agent


@transaction.atomic
def agent_set_mode(*, actor: Actor | None, agent: Agent, mode: str) -> Agent:
    if mode not in Mode.values:
        message = f"mode must be one of {', '.join(Mode.values)}."
        raise InvalidInput("The document is invalid.", fields={"/mode": [message]})
    lock_agent(agent)
    if agent.mode == mode:
        return agent
    before = agent.mode
    agent.mode = mode
    agent.save(update_fields=["mode", "updated_at"])
    record_change(
        actor=actor,
        agent=agent,
        action=GovernanceAction.AGENT_MODE_CHANGED,
        summary=f"Mode {before} → {mode}",
        target=agent,
    )
    return agent


def _settings_of(agent: Agent) -> dict[str, str]:
    return {
        "display_name": agent.display_name,
        "description": agent.description,
        "webhook_url": agent.webhook_url,
        "webhook_format": agent.webhook_format,
    }


def agent_settings_update(
    *,
    actor: Actor | None,
    agent: Agent,
    display_name: str,
    description: str,
    webhook_url: str,
    webhook_format: str,
) -> Agent:
    problems = Problems()
    if len(description) > AGENT_DESCRIPTION_MAX_CHARS:
        problems.error(
            "/description", f"description is longer than {AGENT_DESCRIPTION_MAX_CHARS} characters."
        )
    for message in webhook_url_problems(webhook_url) if webhook_url else []:
        problems.error("/webhook_url", message)
    if problems.errors:
        raise problems.refusal("The settings are invalid.")
    with transaction.atomic():
        before = _settings_of(agent)
        agent.display_name = display_name
        agent.description = description
        agent.webhook_url = webhook_url
        agent.webhook_format = webhook_format
        agent.save(
            update_fields=[
                "display_name", "description", "webhook_url", "webhook_format", "updated_at"
            ]
        )  # fmt: skip
        governance_event_record(
            actor=actor,
            action=GovernanceAction.AGENT_SETTINGS_CHANGED,
            summary=f"Updated settings of {agent.slug}",
            agent=agent,
            target=agent,
            changes=settings_changes(before, _settings_of(agent)),
        )
    return agent


def agent_hooks_replace(
    *, actor: Actor | None, agent: Agent, document: Any
) -> dict[str, list[str]]:
    """PUT /api/v1/agent/hooks: `{"hooks": {...}}` replaces every agent-level hook."""
    problems = Problems()
    if not isinstance(document, dict):
        problems.error("", 'The body must be an object: {"hooks": {"Stop": [...], ...}}.')
        raise problems.refusal()
    for key in document:
        if key != "hooks":
            problems.error(pointer(key), f"Unknown field {key!r}.")
    # A body without `hooks` is a mistake (or an unread body), never "remove every hook".
    if "hooks" not in document:
        problems.error("/hooks", 'hooks is required; {"hooks": {}} removes every hook.')
    hooks, hook_problems = validate_hooks_map(document.get("hooks"), base="/hooks")
    problems.merge(hook_problems)
    if problems.errors:
        raise problems.refusal()
    with transaction.atomic():
        lock_agent(agent)
        replace_hooks(agent, None, hooks, actor=actor_label(actor))
        record_change(
            actor=actor,
            agent=agent,
            action=GovernanceAction.HOOKS_REPLACED,
            summary=f"Replaced agent-level hooks ({len(hooks)})",
        )
    return problems.warnings


@transaction.atomic
def hook_create(
    *,
    actor: Actor | None,
    agent: Agent,
    custom_agent: CustomAgent | None,
    event: str,
    raw: dict[str, Any],
) -> tuple[Hook, dict[str, list[str]]]:
    hook_input, problems = validate_hook(raw, event=event)
    if event not in Event.values:
        problems.error("/event", "event must be Stop, PostToolUse or PreToolUse.")
    if hook_input is None or problems.errors:
        raise problems.refusal("The hook is invalid.")
    lock_agent(agent)
    hook_input = named_in_scope(hook_input, agent=agent, custom_agent=custom_agent, hook=None)
    siblings = Hook.objects.filter(agent=agent, custom_agent=custom_agent, event=event).aggregate(
        last=Max("position"), count=Count("pk")
    )
    if siblings["count"] >= HOOKS_PER_EVENT_MAX:
        problems.error(
            "/event",
            f"{_scope_label(custom_agent).capitalize()} has {siblings['count']} {event} hooks; "
            f"the limit is {HOOKS_PER_EVENT_MAX} per event.",
        )
        raise problems.refusal("Too many hooks.")
    hook = Hook(
        agent=agent,
        custom_agent=custom_agent,
        event=event,
        position=0 if siblings["last"] is None else siblings["last"] + 1,
        enabled=hook_input.enabled,
        definition=hook_input.definition,
        name=hook_input.name,
        description=hook_input.description,
        mode=hook_input.mode,
    )
    set_record_reason(hook, hook_input.record_reason, actor_label(actor))
    hook.save(force_insert=True)
    record_change(
        actor=actor,
        agent=agent,
        custom_agent_name=custom_agent.name if custom_agent else "",
        action=GovernanceAction.HOOK_CREATED,
        summary=f"Added {hook.hook_type} {event} hook {hook_label(hook)} ({_scope_label(custom_agent)})",
        target=hook,
    )
    return hook, problems.warnings


@transaction.atomic
def hook_update(
    *, actor: Actor | None, hook: Hook, raw: dict[str, Any]
) -> tuple[Hook, dict[str, list[str]]]:
    hook_input, problems = validate_hook(raw, event=hook.event)
    if hook_input is None or problems.errors:
        raise problems.refusal("The hook is invalid.")
    lock_hook(hook)
    hook_input = named_in_scope(
        hook_input, agent=hook.agent, custom_agent=hook.custom_agent, hook=hook
    )
    hook.definition = hook_input.definition
    hook.enabled = hook_input.enabled
    hook.name = hook_input.name
    hook.description = hook_input.description
    hook.mode = hook_input.mode
    set_record_reason(hook, hook_input.record_reason, actor_label(actor))
    hook.save(update_fields=[*HOOK_IDENTITY_FIELDS, "definition", "enabled", "updated_at"])
    record_change(
        actor=actor,
        agent=hook.agent,
        custom_agent_name=hook.custom_agent.name if hook.custom_agent else "",
        action=GovernanceAction.HOOK_UPDATED,
        summary=f"Edited {hook.event} hook {hook_label(hook)} ({_scope_label(hook.custom_agent)})",
        target=hook,
    )
    return hook, problems.warnings


@transaction.atomic
def hook_set_enabled(*, actor: Actor | None, hook: Hook, enabled: bool) -> Hook:
    lock_hook(hook)
    if hook.enabled == enabled:
        return hook
    hook.enabled = enabled
    hook.save(update_fields=["enabled", "updated_at"])
    record_change(
        actor=actor,
        agent=hook.agent,
        custom_agent_name=hook.custom_agent.name if hook.custom_agent else "",
        action=GovernanceAction.HOOK_ENABLED if enabled else GovernanceAction.HOOK_DISABLED,
        summary=f"{'Enabled' if enabled else 'Disabled'} {hook.event} hook {hook_label(hook)} ({_scope_label(hook.custom_agent)})",
        target=hook,
    )
    return hook


@transaction.atomic
def hook_move(*, actor: Actor | None, hook: Hook, offset: int) -> Hook:
    """Move a hook up (offset -1) or down (+1) within its event's list."""
    lock_hook(hook)
    siblings = list(
        Hook.objects.select_for_update()
        .filter(agent=hook.agent, custom_agent=hook.custom_agent, event=hook.event)
        .order_by("position", "id")
    )
    index = next(i for i, sibling in enumerate(siblings) if sibling.pk == hook.pk)
    target = index + offset
    if offset == 0 or not 0 <= target < len(siblings):
        return hook
    siblings.insert(target, siblings.pop(index))
    for position, sibling in enumerate(siblings):
        if sibling.position != position:
            sibling.position = position
            sibling.save(update_fields=["position"])
    record_change(
        actor=actor,
        agent=hook.agent,
        custom_agent_name=hook.custom_agent.name if hook.custom_agent else "",
        action=GovernanceAction.HOOK_REORDERED,
        summary=f"Moved {hook.event} hook {hook_label(hook)} to position {target + 1} ({_scope_label(hook.custom_agent)})",
        target=hook,
    )
    return hook


@transaction.atomic
def hook_delete(*, actor: Actor | None, hook: Hook) -> None:
    lock_hook(hook)
    agent, custom_agent, label, event = hook.agent, hook.custom_agent, hook_label(hook), hook.event
    siblings = Hook.objects.filter(
        agent=agent, custom_agent=custom_agent, event=event, position__gt=hook.position
    )
    hook.delete()
    siblings.update(position=F("position") - 1)
    record_change(
        actor=actor,
        agent=agent,
        custom_agent_name=custom_agent.name if custom_agent else "",
        action=GovernanceAction.HOOK_DELETED,
        summary=f"Deleted {event} hook {label} ({_scope_label(custom_agent)})",
    )


def custom_agent_put(
    *,
    actor: Actor | None,
    agent: Agent,
    name: str,
    document: Any,
    base_revision: int | None = None,
) -> tuple[CustomAgent, bool, dict[str, list[str]]]:
    """Create or replace a custom agent from its v2 document → (custom agent, created, warnings);
    with `base_revision` (a reviewed preview) refuses with BaseRevisionMoved if it moved since."""
    parsed, by = validate_named_document(document, name), actor_label(actor)
    with transaction.atomic():
        lock_agent(agent)
        refuse_if_moved(agent, name, base_revision)
        custom_agent, created = write_custom_agent(agent, name, parsed, by, at="/metadata/name")
        record_change(
            actor=actor,
            agent=agent,
            custom_agent_name=name,
            action=GovernanceAction.CUSTOM_AGENT_CREATED
            if created
            else GovernanceAction.CUSTOM_AGENT_REPLACED,
            summary=f"{'Created' if created else 'Replaced'} custom agent {name} ({len(parsed.hooks)} hooks)",
            target=custom_agent,
        )
    return custom_agent, created, parsed.warnings


@transaction.atomic
def custom_agent_create(
    *,
    actor: Actor | None,
    agent: Agent,
    name: str,
    instructions: str = "",
    handoff_description: str = "",
    enable_vanilla_mode: bool = False,
) -> CustomAgent:
    lock_agent(agent)
    problems = Problems()
    validate_name(name, "/name", problems)
    validate_custom_agent_text(instructions, handoff_description, problems)
    if not problems.errors and CustomAgent.objects.filter(agent=agent, name=name).exists():
        problems.error("/name", f"{agent.slug} already has a custom agent named {name!r}.")
    if problems.errors:
        raise problems.refusal("The custom agent is invalid.")
    refuse_past_custom_agent_limit(agent, "/name")
    custom_agent = CustomAgent.objects.create(
        agent=agent,
        name=name,
        instructions=instructions,
        handoff_description=handoff_description,
        enable_vanilla_mode=enable_vanilla_mode,
    )
    record_change(
        actor=actor,
        agent=agent,
        custom_agent_name=name,
        action=GovernanceAction.CUSTOM_AGENT_CREATED,
        summary=f"Created custom agent {name}",
        target=custom_agent,
    )
    return custom_agent


@transaction.atomic
def custom_agent_update(
    *,
    actor: Actor | None,
    custom_agent: CustomAgent,
    instructions: str,
    handoff_description: str,
    enable_vanilla_mode: bool,
) -> CustomAgent:
    problems = Problems()
    validate_custom_agent_text(instructions, handoff_description, problems)
    if problems.errors:
        raise problems.refusal("The custom agent is invalid.")
    lock_agent(custom_agent.agent)
    custom_agent.instructions = instructions
    custom_agent.handoff_description = handoff_description
    custom_agent.enable_vanilla_mode = enable_vanilla_mode
    custom_agent.save(
        update_fields=["instructions", "handoff_description", "enable_vanilla_mode", "updated_at"]
    )
    record_change(
        actor=actor,
        agent=custom_agent.agent,
        custom_agent_name=custom_agent.name,
        action=GovernanceAction.CUSTOM_AGENT_UPDATED,
        summary=f"Edited settings of custom agent {custom_agent.name}",
        target=custom_agent,
    )
    return custom_agent


@transaction.atomic
def custom_agent_delete(*, actor: Actor | None, custom_agent: CustomAgent) -> None:
    agent, name = custom_agent.agent, custom_agent.name
    lock_agent(agent)
    custom_agent.delete()
    record_change(
        actor=actor,
        agent=agent,
        custom_agent_name=name,
        action=GovernanceAction.CUSTOM_AGENT_DELETED,
        summary=f"Deleted custom agent {name}",
        deleted=True,
    )


@transaction.atomic
def revision_rollback(
    *, actor: Actor | None, revision: ConfigRevision, base_revision: int | None = None
) -> ConfigRevision:
    """Restore a scope to what `revision` recorded; the restore is itself a new revision.
    With `base_revision` it refuses with BaseRevisionMoved if the scope changed since."""
    agent = revision.agent
    lock_agent(agent)
    refuse_if_moved(agent, revision.custom_agent_name, base_revision)
    content, by = revision_content(revision), actor_label(actor)
    if revision.scope == ConfigRevision.Scope.AGENT:
        replace_hooks(agent, None, content.hooks, actor=by)
        if content.mode is not None and agent.mode != content.mode:
            agent.mode = content.mode
            agent.save(update_fields=["mode", "updated_at"])
    elif content.deleted:
        CustomAgent.objects.filter(agent=agent, name=revision.custom_agent_name).delete()
    elif content.document is not None:
        write_custom_agent(agent, revision.custom_agent_name, content.document, by, at="/name")
    return record_change(
        actor=actor,
        agent=agent,
        custom_agent_name=revision.custom_agent_name,
        action=GovernanceAction.REVISION_ROLLED_BACK,
        summary=f"Rolled back {revision.get_scope_display().lower()}"
        f"{' ' + revision.custom_agent_name if revision.custom_agent_name else ''} to revision {revision.number}",
        deleted=content.deleted,
    )


@transaction.atomic
def agent_token_issue(*, actor: Actor | None, agent: Agent, name: str) -> IssuedToken:
    name = (name or "").strip() or "default"
    new = token_generate(AGENT_TOKEN_KIND)
    token = AgentToken.objects.create(
        agent=agent,
        name=name[:100],
        prefix=new.prefix,
        digest=new.digest,
        created_by=actor_label(actor),
    )
    governance_event_record(
        actor=actor,
        action=GovernanceAction.TOKEN_ISSUED,
        summary=f"Issued agent token {name} ({new.prefix}…)",
        agent=agent,
        target=token,
    )
    return IssuedToken(token=token, plaintext=new.plaintext)


@transaction.atomic
def agent_token_revoke(*, actor: Actor | None, token: AgentToken) -> AgentToken:
    updated = AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    token.refresh_from_db(fields=["revoked_at"])
    if updated:
        governance_event_record(
            actor=actor,
            action=GovernanceAction.TOKEN_REVOKED,
            summary=f"Revoked agent token {token.name} ({token.prefix}…)",
            agent=token.agent,
            target=token,
        )
    return token
