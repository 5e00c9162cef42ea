"""The two steps of review before apply, as a browser without JavaScript takes them: post the
change (a preview), then post the preview's Confirm button with its hidden fields."""

from __future__ import annotations

from typing import Any

from django.test import Client


def confirm_fields(preview: Any) -> dict[str, Any]:
    """The fields the preview page's Confirm button posts."""
    assert preview.status_code == 200, preview.status_code
    assert "preview" in preview.context, "no preview was shown"
    fields: dict[str, Any] = {
        "step": "confirm",
        "base_revision": preview.context["preview"].base_revision,
    }
    if preview.context["text"]:
        fields["text"] = preview.context["text"]
    return fields


def preview_then_confirm(client: Client, url: str, data: Any = None, **extra: Any) -> Any:
    preview = client.post(url, data or {}, **extra)
    return client.post(url, confirm_fields(preview), **extra)
