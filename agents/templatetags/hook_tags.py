"""`{{ key|hook_name:names }}`: a hook's current name from a `{key: name}` map (or a
`{key: HookRef}` map, agents.selectors.hook_refs) the view resolved once per page, or the key
when the hook is gone. `{{ key|hook_ref:refs }}`: the HookRef itself (None when unknown)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def hook_name(key: Any, names: Any) -> str:
    if isinstance(names, dict):
        found = names.get(key)
        return str(getattr(found, "name", found) or key)
    return str(key)


@register.filter
def hook_ref(key: Any, refs: Any) -> Any:
    return refs.get(str(key)) if isinstance(refs, dict) and key else None
