"""`{{ key|hook_name:names }}`: a hook's current name from a `{key: name}` map the view
resolved once per page (agents.selectors.hook_names), or the key when the hook is gone."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def hook_name(key: Any, names: Any) -> str:
    if isinstance(names, dict):
        return str(names.get(key) or key)
    return str(key)
