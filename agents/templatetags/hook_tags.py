"""`{{ key|hook_name:names }}`: a hook's current name from a `{key: name}` map (or a
`{key: HookRef}` map, agents.selectors.hook_refs) the view resolved once per page, or the key
when the hook is gone. `{{ key|hook_ref:refs }}`: the HookRef itself (None when unknown).
`{{ text|soft_breaks }}`: the text escaped, with a line-break opportunity after each of
`: | / ,` so an identifier (a hook name, a reason code, a tool name) wraps at its parts
in a narrow table column instead of mid-word."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_SOFT_BREAK_AFTER = re.compile(r"([:|/,])")


@register.filter
def hook_name(key: Any, names: Any) -> str:
    if isinstance(names, dict):
        found = names.get(key)
        return str(getattr(found, "name", found) or key)
    return str(key)


@register.filter
def hook_ref(key: Any, refs: Any) -> Any:
    return refs.get(str(key)) if isinstance(refs, dict) and key else None


@register.filter(needs_autoescape=True)
def soft_breaks(text: Any, autoescape: bool = True) -> SafeString:
    # Escaping first: an entity (&amp; &#x27; ...) holds none of the break characters.
    escaped = conditional_escape(text) if autoescape else str(text)
    return mark_safe(_SOFT_BREAK_AFTER.sub(r"\1<wbr>", str(escaped)))  # noqa: S308 - escaped above
