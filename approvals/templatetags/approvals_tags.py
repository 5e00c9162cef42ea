"""Template filters of the reviewer inbox."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Arguments as readable JSON (escaped by the template, never marked safe)."""
    if value is None:
        return ""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def remaining(expires_at: datetime | None) -> str:
    """The countdown's first frame, before the script takes over."""
    if expires_at is None:
        return ""
    seconds = int((expires_at - timezone.now()).total_seconds())
    if seconds <= 0:
        return "expired"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}:{secs:02d}"
