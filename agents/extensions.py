"""What the agent pages show from apps above agents, through kernel extension points
(console/extensions.py). agents never imports those apps; the audit app registers its
providers in `AuditConfig.ready()` (audit/agent_pages.py).

- `agent_hooks_sections(agent)`: HTML sections at the top of an agent's hooks page (audit: the
  dead-letter summary, the record batches the console refused);
- `hook_page_sections(user, hook)`: HTML sections of a hook's own page, after what the hook is
  (audit: what it decided day by day, counted from its interception records);
- `hook_notes(agent, keys)`: warnings about some of `keys` (hook keys of `agent`) for the
  health strip (audit: each hook's last recorded error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.models import Agent, Hook
from console.extensions import ExtensionPoint


@dataclass(frozen=True)
class HookNote:
    """A warning about one hook, and the interception record that shows it."""

    key: str
    message: str
    record_id: int | None = None


agent_hooks_sections: ExtensionPoint[[Agent], str] = ExtensionPoint("agents.agent_hooks_sections")
hook_page_sections: ExtensionPoint[[Any, Hook], str] = ExtensionPoint("agents.hook_page_sections")
hook_notes: ExtensionPoint[[Agent, list[str]], list[HookNote]] = ExtensionPoint("agents.hook_notes")
