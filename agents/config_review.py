"""Review before apply: the previews of the YAML editor, of an import and of a rollback (what
will change, against which base revision), and the guard that refuses to apply a preview
whose base moved meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.config_diff import (
    ABSENT,
    ConfigDiff,
    ScopeConfig,
    config_diff,
    config_of_agent_level,
    config_of_document,
    config_of_stored_document,
)
from agents.models import Agent, ConfigRevision, Mode
from agents.selectors import (
    agent_level_hooks,
    custom_agent_as_document,
    find_custom_agent,
    revisions_for_scope,
)
from agents.validation import (
    CustomAgentDocument,
    HookInput,
    Problems,
    ValidationFailed,
    validate_document,
    validate_hooks_map,
)


class BaseRevisionMoved(Exception):
    """The scope changed after the preview was made: what was reviewed is not what would apply."""

    def __init__(self, base: int, current: int) -> None:
        super().__init__(f"The configuration moved from revision {base} to {current}.")
        self.base = base
        self.current = current


def scope_revision(agent: Agent, custom_agent_name: str = "") -> int:
    """The number of the scope's latest revision (0 before the first)."""
    latest = (
        revisions_for_scope(agent, custom_agent_name)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    return latest or 0


def refuse_if_moved(agent: Agent, custom_agent_name: str, base_revision: int | None) -> None:
    """Call with the agent lock held; `None` means the caller reviewed nothing (the API)."""
    if base_revision is None:
        return
    current = scope_revision(agent, custom_agent_name)
    if current != base_revision:
        raise BaseRevisionMoved(base_revision, current)


def validate_named_document(document: Any, name: str) -> CustomAgentDocument:
    """Validate a v2 document that is to become the custom agent `name`."""
    metadata = document.get("metadata") if isinstance(document, dict) else None
    given = metadata.get("name") if isinstance(metadata, dict) else None
    mismatch = (
        f"metadata.name {given!r} does not match the URL name {name!r}."
        if isinstance(given, str) and given and given != name
        else None
    )
    try:
        parsed = validate_document(document)
    except ValidationFailed as exc:
        if mismatch:  # reported together with every other problem of the document
            exc.fields.setdefault("/metadata/name", []).append(mismatch)
        raise
    if mismatch:
        raise ValidationFailed(Problems(errors={"/metadata/name": [mismatch]}))
    return parsed


def current_config(agent: Agent, custom_agent_name: str = "") -> ScopeConfig:
    if not custom_agent_name:
        return ScopeConfig(
            exists=True, settings={"mode": agent.mode}, hooks=agent_level_hooks(agent)
        )
    custom_agent = find_custom_agent(agent, custom_agent_name)
    if custom_agent is None:
        return ABSENT
    return config_of_stored_document(custom_agent_as_document(custom_agent))


@dataclass(frozen=True)
class Preview:
    diff: ConfigDiff
    base_revision: int
    warnings: dict[str, list[str]]


def _preview(
    agent: Agent, name: str, target: ScopeConfig, warnings: dict[str, list[str]], base: int
) -> Preview:
    return Preview(config_diff(current_config(agent, name), target), base, warnings)


def document_preview(agent: Agent, name: str, document: Any) -> Preview:
    """What putting `document` as custom agent `name` would change; raises ValidationFailed."""
    # The base is read before the configuration: a change committed in between makes the
    # confirmation refuse, never apply over a configuration nobody reviewed.
    base = scope_revision(agent, name)
    parsed = validate_named_document(document, name)
    return _preview(agent, name, config_of_document(parsed), parsed.warnings, base)


@dataclass(frozen=True)
class RevisionContent:
    """What a rollback to a revision restores, validated by today's rules: the agent level's
    hooks and mode, a custom agent's document, or the custom agent's deletion."""

    hooks: list[HookInput]
    mode: str | None = None
    document: CustomAgentDocument | None = None
    deleted: bool = False
    warnings: dict[str, list[str]] = field(default_factory=dict)

    def config(self, agent: Agent) -> ScopeConfig:
        if self.deleted:
            return ABSENT
        if self.document is not None:
            return config_of_document(self.document)
        return config_of_agent_level(self.mode or agent.mode, self.hooks)


def revision_content(revision: ConfigRevision) -> RevisionContent:
    """Raises ValidationFailed when the snapshot no longer validates."""
    snapshot = revision.snapshot or {}
    if revision.scope == ConfigRevision.Scope.AGENT:
        hooks, problems = validate_hooks_map(snapshot.get("hooks"), base="/hooks")
        if problems.errors:
            raise ValidationFailed(problems, "That revision no longer validates.")
        mode = snapshot.get("mode")
        return RevisionContent(
            hooks=hooks, mode=mode if mode in Mode.values else None, warnings=problems.warnings
        )
    if snapshot.get("deleted"):
        return RevisionContent(hooks=[], deleted=True)
    parsed = validate_document(snapshot)
    return RevisionContent(hooks=parsed.hooks, document=parsed, warnings=parsed.warnings)


def rollback_preview(revision: ConfigRevision) -> Preview:
    agent, name = revision.agent, revision.custom_agent_name
    base = scope_revision(agent, name)
    content = revision_content(revision)
    return _preview(agent, name, content.config(agent), content.warnings, base)
