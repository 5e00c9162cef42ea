"""Forms of the reviewer pages: the History tab's filters and the inbox's decision fields."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django import forms

from approvals.history_selectors import HistoryFilters, day_span
from approvals.models import EscalationStatus
from console.errors import InvalidInput
from console.parsers import ensure_storable, json_loads


class HistoryFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[("", "Any status"), *EscalationStatus.choices], required=False
    )
    agent = forms.CharField(required=False, max_length=64)
    reviewer = forms.CharField(required=False, max_length=150)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def clean_since(self) -> date | None:
        return self._representable(self.cleaned_data.get("since"))

    def clean_until(self) -> date | None:
        return self._representable(self.cleaned_data.get("until"))

    @staticmethod
    def _representable(day: date | None) -> date | None:
        if day is not None:
            try:
                day_span(day)
            except OverflowError:
                raise forms.ValidationError("Out of range: pick a day in years 1-9999.") from None
        return day

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
    except InvalidInput as exc:
        fields = exc.fields or {"": [exc.message]}
        return None, {f"/args{pointer}": messages for pointer, messages in fields.items()}
