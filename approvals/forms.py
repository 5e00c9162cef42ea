"""Forms of the reviewer pages: the History tab's filters and the inbox's decision fields."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from approvals.models import EscalationStatus
from approvals.selectors import HistoryFilters
from console.parsers import DocumentRefused, ensure_storable, json_loads


class HistoryFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[("", "Any status"), *EscalationStatus.choices], required=False
    )
    agent = forms.CharField(required=False, max_length=64)
    reviewer = forms.CharField(required=False, max_length=150)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def filters(self) -> HistoryFilters:
        data = self.cleaned_data if self.is_valid() else {}
        return HistoryFilters(
            status=data.get("status") or "",
            agent=(data.get("agent") or "").strip(),
            reviewer=(data.get("reviewer") or "").strip(),
            since=data.get("since"),
            until=data.get("until"),
        )


def parse_args_text(text: str | None) -> tuple[Any, dict[str, list[str]]]:
    """The edit-then-approve textarea: empty means "as shown"; else a JSON object."""
    if text is None or not text.strip():
        return None, {}
    try:
        return ensure_storable(json_loads(text)), {}
    except json.JSONDecodeError as exc:
        return None, {
            "/args": [f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."]
        }
    except DocumentRefused as exc:
        fields = exc.fields or {"": [exc.message]}
        return None, {f"/args{pointer}": messages for pointer, messages in fields.items()}
