"""Reads of the agents app: scoped querysets, access helpers and document projections."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, OuterRef, Prefetch, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.http import Http404

from agents.models import Agent, AgentToken, ConfigRevision, CustomAgent, Hook
from agents.validation import (
    EVENTS,
    HookInput,
    custom_agent_document,
    hooks_document,
    validate_hook,
)
from console.actors import is_agent
from console.api import yaml_dump
from console.roles import is_admin, is_auditor, is_reviewer


def agents_visible_to(user: Any) -> QuerySet[Agent]:
    """Agents a person may see: admins, auditors and reviewers see all; agents see themselves."""
    if is_agent(user):
        return Agent.objects.filter(pk=user.agent.pk)
    if is_admin(user) or is_auditor(user) or is_reviewer(user):
        return Agent.objects.all()
    return Agent.objects.none()


def agents_by_slug(slugs: list[str]) -> list[Agent]:
    """The agents among `slugs` that exist, by slug (for callers that name agents)."""
    return list(Agent.objects.filter(slug__in=slugs).order_by("slug"))


def get_agent_for_user(user: Any, slug: str, *, write: bool = False) -> Agent:
    """The agent `slug` if `user` may read it (and, with write=True, change it); else 404."""
    if write and not (is_admin(user) or (is_agent(user) and user.agent.slug == slug)):
        raise Http404("No such agent.")
    agent = agents_visible_to(user).filter(slug=slug).first()
    if agent is None:
        raise Http404("No such agent.")
    return agent


def get_custom_agent(agent: Agent, name: str) -> CustomAgent:
    custom_agent = CustomAgent.objects.filter(agent=agent, name=name).first()
    if custom_agent is None:
        raise Http404("No such custom agent.")
    return custom_agent


def get_custom_agent_for_user(user: Any, slug: str, name: str) -> CustomAgent:
    """Custom agent `name` of agent `slug`, for someone who may change that agent; else 404."""
    return get_custom_agent(get_agent_for_user(user, slug, write=True), name)


def get_hook_for_user(user: Any, slug: str, key: str) -> Hook:
    """Hook `key` of agent `slug`; hooks are edited by admins only, anyone else gets 404."""
    agent = get_agent_for_user(user, slug, write=True)
    hook = Hook.objects.select_related("agent", "custom_agent").filter(key=key, agent=agent).first()
    if hook is None or not is_admin(user):
        raise Http404("No such hook.")
    return hook


def hook_rows(agent: Agent, custom_agent: CustomAgent | None) -> list[Hook]:
    return list(
        Hook.objects.filter(agent=agent, custom_agent=custom_agent).order_by(
            "event", "position", "id"
        )
    )


def hook_input(hook: Hook) -> HookInput:
    """A stored hook as the validated shape documents are written from."""
    return HookInput(
        event=hook.event,
        definition=hook.definition,
        enabled=hook.enabled,
        name=hook.name,
        description=hook.description,
        mode=hook.mode,
        record_reason=hook.record_reason,
    )


def agent_level_hooks(agent: Agent) -> dict[str, list[dict[str, Any]]]:
    return hooks_document([hook_input(hook) for hook in hook_rows(agent, None)])


def custom_agent_as_document(
    custom_agent: CustomAgent, hooks: list[Hook] | None = None
) -> dict[str, Any]:
    """The v2 document; `hooks` in order when the caller already has them (prefetched)."""
    if hooks is None:
        hooks = hook_rows(custom_agent.agent, custom_agent)
    return custom_agent_document(
        name=custom_agent.name,
        instructions=custom_agent.instructions,
        handoff_description=custom_agent.handoff_description,
        enable_vanilla_mode=custom_agent.enable_vanilla_mode,
        hooks=[hook_input(hook) for hook in hooks],
    )


def custom_agents_as_documents(agent: Agent) -> list[dict[str, Any]]:
    """Every custom agent's v2 document in two queries, whatever their number."""
    ordered = Prefetch("hooks", queryset=Hook.objects.order_by("event", "position", "id"))
    items = CustomAgent.objects.filter(agent=agent).order_by("name").prefetch_related(ordered)
    return [custom_agent_as_document(item, list(item.hooks.all())) for item in items]


def scope_snapshot(agent: Agent, custom_agent_name: str | None) -> dict[str, Any]:
    """What a revision stores: the agent level (mode + hooks) or a custom agent's document."""
    if custom_agent_name is None:
        return {"mode": agent.mode, "hooks": agent_level_hooks(agent)}
    return custom_agent_as_document(get_custom_agent(agent, custom_agent_name))


def revisions_for_scope(agent: Agent, custom_agent_name: str = "") -> QuerySet[ConfigRevision]:
    scope = ConfigRevision.Scope.CUSTOM_AGENT if custom_agent_name else ConfigRevision.Scope.AGENT
    return ConfigRevision.objects.filter(
        agent=agent, scope=scope, custom_agent_name=custom_agent_name
    )


def revision_previous(revision: ConfigRevision) -> ConfigRevision | None:
    return (
        revisions_for_scope(revision.agent, revision.custom_agent_name)
        .filter(number__lt=revision.number)
        .order_by("-number")
        .first()
    )


def agents_overview(user: Any) -> QuerySet[Agent]:
    """The portal's agent list: counts and last token use as subqueries (one query, no N+1)."""
    hooks = (
        Hook.objects.filter(agent=OuterRef("pk"), custom_agent=None)
        .values("agent")
        .annotate(n=Count("pk"))
        .values("n")
    )
    custom_agents = (
        CustomAgent.objects.filter(agent=OuterRef("pk"))
        .values("agent")
        .annotate(n=Count("pk"))
        .values("n")
    )
    last_used = (
        AgentToken.objects.filter(agent=OuterRef("pk"), last_used_at__isnull=False)
        .order_by("-last_used_at")
        .values("last_used_at")[:1]
    )
    return agents_visible_to(user).annotate(
        hooks_count=Coalesce(Subquery(hooks), 0),
        custom_agents_count=Coalesce(Subquery(custom_agents), 0),
        last_token_use=Subquery(last_used),
    )


# Portal list pages: rows per page (?page=N; plain links, no script needed).
PAGE_SIZE = 50
DIFF_MAX_LINES = 20_000
DELETED_NAMES_SHOWN = 50


def page_of(rows: Any, number: Any, size: int = PAGE_SIZE) -> Page[Any]:
    """One page of `rows`; a missing, bad or too-large number gives the first or last page."""
    return Paginator(rows, size).get_page(number)


@dataclass(frozen=True)
class HookGroup:
    event: str
    hooks: list[Hook]  # those on this page
    total: int  # in the whole scope


@dataclass(frozen=True)
class HookGroups:
    groups: list[HookGroup]
    page: Page[Any]


def hook_groups(agent: Agent, custom_agent: CustomAgent | None, page: Any = None) -> HookGroups:
    """One page of a scope's hooks, grouped by event in EVENTS order; every event present
    (empty lists included), each with its total in the scope."""
    scope = Hook.objects.filter(agent=agent, custom_agent=custom_agent)
    totals = dict(scope.order_by().values_list("event").annotate(n=Count("pk")))
    event_rank = Case(*(When(event=e, then=Value(i)) for i, e in enumerate(EVENTS)), default=99)
    ordered = scope.annotate(event_rank=event_rank).order_by("event_rank", "position", "id")
    paginator = Paginator(ordered, PAGE_SIZE)
    paginator.count = sum(totals.values())  # known already: no COUNT query
    current = paginator.get_page(page)
    rows = list(current.object_list)
    return HookGroups(
        groups=[
            HookGroup(event, [hook for hook in rows if hook.event == event], totals.get(event, 0))
            for event in EVENTS
        ],
        page=current,
    )


def hook_warnings(hook: Hook) -> dict[str, list[str]]:
    """Warnings the stored hook still earns (a legal field that has no effect where it stands)."""
    raw = {**hook.definition, "enabled": hook.enabled}
    return validate_hook(raw, event=hook.event)[1].warnings


def agent_tokens(agent: Agent) -> QuerySet[AgentToken]:
    return AgentToken.objects.filter(agent=agent).order_by("-created_at", "-id")


def get_agent_token(agent: Agent, pk: int) -> AgentToken:
    token = AgentToken.objects.select_related("agent").filter(agent=agent, pk=pk).first()
    if token is None:
        raise Http404("No such token.")
    return token


def get_revision(agent: Agent, number: int) -> ConfigRevision:
    revision = ConfigRevision.objects.select_related("agent").filter(agent=agent, number=number)
    found = revision.first()
    if found is None:
        raise Http404("No such revision.")
    return found


def deleted_custom_agent_names(agent: Agent) -> list[str]:
    """Custom agents that are gone but whose history is kept (and can be rolled back)."""
    existing = CustomAgent.objects.filter(agent=agent).values("name")
    return list(
        ConfigRevision.objects.filter(agent=agent, scope=ConfigRevision.Scope.CUSTOM_AGENT)
        .exclude(custom_agent_name__in=existing)
        .values_list("custom_agent_name", flat=True)
        .distinct()
        .order_by("custom_agent_name")
    )


def revision_diff(revision: ConfigRevision) -> tuple[ConfigRevision | None, list[tuple[str, str]]]:
    """The unified diff of a revision's snapshot against the previous one of the same scope,
    as (css class, line) pairs; the previous revision is None for the first of a scope."""
    previous = revision_previous(revision)
    before = yaml_dump(previous.snapshot).splitlines() if previous else []
    after = yaml_dump(revision.snapshot).splitlines()
    if len(before) + len(after) > DIFF_MAX_LINES:
        # difflib's cost grows with the product of the sides: seconds of CPU past this.
        return previous, [
            (
                "hunk",
                f"@@ r{previous.number if previous else 0} and r{revision.number} are "
                f"{len(before) + len(after)} lines of YAML together: too long to compare line "
                f"by line here (the limit is {DIFF_MAX_LINES}) @@",
            )
        ]
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=f"r{previous.number}" if previous else "(nothing)",
        tofile=f"r{revision.number}",
        lineterm="",
    )
    return previous, [(_diff_class(line), line) for line in lines]


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "same"


def custom_agents_overview(agent: Agent) -> QuerySet[CustomAgent]:
    return (
        CustomAgent.objects.filter(agent=agent)
        .defer("instructions")
        .annotate(hooks_count=Count("hooks"))
        .order_by("name")
    )


def revisions_list(agent: Agent, custom_agent_name: str = "") -> QuerySet[ConfigRevision]:
    """The history page's rows: newest first, without the snapshots (read one at a time)."""
    return revisions_for_scope(agent, custom_agent_name).defer("snapshot").order_by("-number")


def find_custom_agent(agent: Agent, name: str) -> CustomAgent | None:
    """The custom agent `name` of `agent`, or None when it was deleted (its history remains)."""
    return CustomAgent.objects.filter(agent=agent, name=name).first() if name else None


def agent_tab_counts(agent: Agent) -> dict[str, int]:
    return {
        "custom_agents_count": CustomAgent.objects.filter(agent=agent).count(),
        "tokens_count": AgentToken.objects.filter(agent=agent, revoked_at__isnull=True).count(),
    }


def hook_names(keys: Any) -> dict[str, str]:
    """Current names of the hooks with these keys (records and escalations keep keys only;
    a name is resolved when shown). A deleted hook is simply absent."""
    wanted = {str(key) for key in keys if key}
    if not wanted:
        return {}
    return dict(Hook.objects.filter(key__in=wanted).values_list("key", "name"))


def reason_hook_keys(agent: Agent) -> frozenset[str]:
    """Keys of the agent's hooks (any scope) opted in to "record its reason"."""
    rows = Hook.objects.filter(agent=agent, record_reason=True).values_list("key", flat=True)
    return frozenset(rows)


# The same keys as one SQL expression (a text[]; named parameter `agent`, the agent's id):
# PostgreSQL's ingest reads them inside its batch's first statement, not in a query of their own.
REASON_HOOK_KEYS_SQL = (
    f"(SELECT coalesce(array_agg(key), '{{}}') FROM {Hook._meta.db_table} "  # noqa: S608 - fixed names
    "WHERE agent_id = %(agent)s AND record_reason)"
)


@dataclass(frozen=True)
class HookRef:
    """What a record shows of a hook it names: the hook now, or what the revision history
    last said of it once it is deleted (`deleted`; `agent_slug` empty when nothing did)."""

    key: str
    name: str
    description: str = ""
    agent_slug: str = ""
    custom_agent: str = ""
    event: str = ""
    record_reason: bool = False
    record_reason_by: str = ""
    deleted: bool = False
    # Not a hook of the console (no `hk_` key): the declaration's base binding, or an
    # interceptor another host named.
    builtin: bool = False

    def __str__(self) -> str:
        return self.name


# How governance summaries name a hook (agents.revisions.hook_label): “name” (hk_…).
_LABELLED_KEY = re.compile(r"\u201c([^\u201d]*)\u201d \((hk_[A-Za-z0-9]+)\)")


def hook_refs(keys: Any) -> dict[str, HookRef]:
    """The hooks with these keys, in one query (plus one over the revision summaries when
    some are gone): records keep keys only, a hook is resolved when shown."""
    wanted = {str(key) for key in keys if key}
    if not wanted:
        return {}
    rows = Hook.objects.filter(key__in=wanted).select_related("agent", "custom_agent")
    found = {
        hook.key: HookRef(
            key=hook.key,
            name=hook.name,
            description=hook.description,
            agent_slug=hook.agent.slug,
            custom_agent=hook.custom_agent.name if hook.custom_agent else "",
            event=hook.event,
            record_reason=hook.record_reason,
            record_reason_by=hook.record_reason_by,
        )
        for hook in rows
    }
    for key in wanted - found.keys():
        if not key.startswith("hk_"):
            found[key] = HookRef(key=key, name=key, builtin=True)
    gone = sorted(wanted - found.keys())
    if gone:
        named = Q()
        for key in gone:
            named |= Q(summary__contains=key)
        summaries = ConfigRevision.objects.filter(named).order_by("-pk")
        for summary, slug in summaries.values_list("summary", "agent__slug")[:200]:
            for name, key in _LABELLED_KEY.findall(summary):
                if key in wanted and key not in found:
                    found[key] = HookRef(key=key, name=name, agent_slug=slug, deleted=True)
        for key in gone:
            found.setdefault(key, HookRef(key=key, name=key, deleted=True))
    return found


def hook_name_by_key(key_field: str) -> Subquery[Any]:
    """An annotation: the current name of the hook whose key is the outer row's `key_field`."""
    return Subquery(Hook.objects.filter(key=OuterRef(key_field)).values("name")[:1])


def hook_keys_matching(value: str, *, agent_slug: str | None = None) -> list[str]:
    """What a `hook=` filter means: the key itself, and the keys of hooks with that name
    (case-insensitive; of one agent when `agent_slug` is given)."""
    named = Hook.objects.filter(name__iexact=value.strip())
    if agent_slug:
        named = named.filter(agent__slug=agent_slug)
    return [value, *named.values_list("key", flat=True)]


def agent_slugs_by_id(ids: Any) -> dict[int, str]:
    """{agent id: slug} for these ids (the record facets group by agent id)."""
    wanted = {int(pk) for pk in ids}
    if not wanted:
        return {}
    return dict(Agent.objects.filter(pk__in=wanted).values_list("pk", "slug"))


def hook_keys_with_prefix(prefix: str, *, agent_slug: str | None = None, limit: int) -> list[str]:
    """What a `hook_prefix=` filter means: the keys of up to `limit` hooks whose name or key
    starts with `prefix`, case-insensitive (of one agent when `agent_slug` is given)."""
    value = prefix.strip()
    hooks = Hook.objects.filter(Q(name__istartswith=value) | Q(key__istartswith=value))
    if agent_slug:
        hooks = hooks.filter(agent__slug=agent_slug)
    return list(hooks.order_by("key").values_list("key", flat=True)[:limit])


def hooks_with_prefix(prefix: str, *, limit: int) -> list[tuple[str, str]]:
    """(name, agent slug) of up to `limit` hooks whose name starts with `prefix`,
    case-insensitive, by name: suggestions for a hook name filter."""
    hooks = Hook.objects.filter(name__istartswith=prefix.strip()).order_by("name", "key")
    return list(hooks.values_list("name", "agent__slug")[:limit])


HOOK_REVISIONS_SHOWN = 20


def hook_revisions(hook: Hook) -> list[tuple[ConfigRevision, bool]]:
    """The newest revisions of the hook's scope, each with whether it names this hook (its
    own edits do; a document replacement or rollback of the scope may have changed it too)."""
    name = hook.custom_agent.name if hook.custom_agent else ""
    rows = revisions_list(hook.agent, name)[:HOOK_REVISIONS_SHOWN]
    return [(revision, hook.key in revision.summary) for revision in rows]
