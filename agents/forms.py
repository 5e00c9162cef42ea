"""Portal forms. They only turn posted fields into the values a service takes; every rule
lives in agents.validation and reaches the form as a DomainError keyed by JSON pointer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import yaml
from django import forms

from agents.models import Agent, Hook
from agents.validation import EVENTS, HOOK_TYPES, MATCHER_EVENTS, MODEL_TIERS
from console.errors import DomainError, InvalidInput
from console.parsers import TOO_DEEP, ensure_storable, json_loads, yaml_loads

IMPORT_MAX_BYTES = 1024 * 1024


class WarningBoundField(forms.BoundField):
    @property
    def warnings(self) -> list[str]:
        found: list[str] = getattr(self.form, "warnings", {}).get(self.name, [])
        return found

    @property
    def scope(self) -> FieldScope | None:
        """Which hooks the field applies to, when the form says (HookForm)."""
        scopes: dict[str, FieldScope] = getattr(self.form, "FIELD_SCOPES", {})
        return scopes.get(self.name)

    @property
    def applies(self) -> bool:
        """Whether the field applies to the hook as the form stands (its event and type)."""
        applies_to = getattr(self.form, "field_applies", None)
        return applies_to is None or bool(applies_to(self.name))


class ProblemsForm(forms.Form):
    """A form that shows a service's pointer-keyed errors and warnings beside its fields."""

    bound_field_class = WarningBoundField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.warnings: dict[str, list[str]] = {}

    @property
    def form_warnings(self) -> list[str]:
        return self.warnings.get("__all__", [])

    def field_for_pointer(self, pointer: str) -> str | None:
        """A pointer's first segment names the field; anything else is a form-wide problem."""
        name = pointer.lstrip("/").split("/", 1)[0]
        return name if name in self.fields else None

    def add_problems(self, exc: DomainError) -> None:
        """The portal's one mapping of a refusal onto a form: each pointer's messages on its
        field (or the form), the message itself when no field is named."""
        for pointer, messages in exc.fields.items():
            name = self.field_for_pointer(pointer)
            for message in messages:
                self.add_error(name, message)
        if not exc.fields:
            self.add_error(None, exc.message)
        if isinstance(exc, InvalidInput):
            self.show_warnings(exc.warnings)

    def show_warnings(self, warnings: dict[str, list[str]]) -> None:
        for pointer, messages in warnings.items():
            name = self.field_for_pointer(pointer) or "__all__"
            self.warnings.setdefault(name, []).extend(messages)


@dataclass(frozen=True)
class FieldScope:
    """The hooks a field applies to: these types on these events."""

    types: tuple[str, ...] = HOOK_TYPES
    events: tuple[str, ...] = EVENTS
    hint: str = ""

    def covers(self, event: str, hook_type: str) -> bool:
        return hook_type in self.types and event in self.events


def _lf(value: str) -> str:
    # Browsers post textareas with CRLF; a bash script with CR in it does not run.
    return value.replace("\r\n", "\n").replace("\r", "\n")


def _select(choices: list[tuple[str, str]]) -> forms.Select:
    return forms.Select(choices=choices)


class HookForm(ProblemsForm):
    """One hook. Choice-like fields are free text so that bad values reach the validator."""

    name = forms.CharField(
        required=False,
        help_text="A short name people read in the inbox, the audit log and the dashboard; "
        "unique among the hooks of this scope. Left blank, it is named from the event and "
        "matcher.",
    )
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: what the hook is for and who owns it.",
    )
    mode = forms.CharField(
        required=False,
        initial="enforce",
        widget=_select(
            [
                ("enforce", "enforce — its verdicts act"),
                ("shadow", "shadow — records only"),
                ("disabled", "disabled — kept, not run"),
            ]
        ),
        help_text="Shadow runs the hook and records what it would have blocked or escalated, "
        "but never acts: roll a new hook out in shadow first and watch its page.",
    )
    recordReason = forms.BooleanField(
        required=False,
        label="Record its reason",
        help_text="Payload trade-off: records keep this hook's own reason text (at most 256 "
        "bytes), shown to auditors. A reason may quote the payload (a command, a file, an "
        "answer) that records otherwise never hold. Off by default.",
    )
    event = forms.CharField(widget=_select([(e, e) for e in EVENTS]))
    type = forms.CharField(
        initial="prompt",
        widget=_select(
            [
                ("prompt", "prompt — an LLM judges"),
                ("command", "command — a sandboxed command or script"),
                ("approval", "approval — ask a reviewer (PreToolUse only)"),
            ]
        ),
    )
    matcher = forms.CharField(
        required=False,
        help_text="Regular expression (RE2 syntax: no lookaround or backreferences) on tool names, "
        "anchored as ^(…)$; * matches every tool. "
        "Required for PostToolUse and PreToolUse. At most 1024 characters.",
    )
    prompt = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="$ARGUMENTS is replaced by the hook context JSON; without it the context is "
        "appended. At most 64 KB.",
    )
    command = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"class": "mono"}),
        help_text="An inline shell command; or use a script below, not both.",
    )
    script = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"class": "code", "rows": 10, "spellcheck": "false"}),
        help_text="First line #!/bin/bash or #!/usr/bin/env python3; at most 64 KB.",
    )
    timeout = forms.IntegerField(required=False, help_text="Seconds, 1–300 (default 30).")
    failMode = forms.CharField(
        required=False,
        label="Fail mode",
        widget=_select(
            [("", "default (allow)"), ("allow", "allow on error"), ("block", "block on error")]
        ),
    )
    model = forms.CharField(
        required=False,
        label="Model tier",
        widget=_select([("", "default (ReasoningFast)"), *[(t, t) for t in MODEL_TIERS]]),
    )
    model_deployment = forms.CharField(
        required=False,
        label="…or deployment name",
        help_text="A model deployment name instead of a tier.",
    )
    maxRejections = forms.IntegerField(
        required=False,
        label="Max rejections",
        help_text="1–25 (default 3); only prompt Stop hooks use it.",
    )
    expiresIn = forms.IntegerField(
        required=False,
        label="Expires in (s)",
        help_text="Seconds until the escalation expires (default 600).",
    )
    approvalsRequired = forms.IntegerField(
        required=False, label="Approvals required", help_text="Default 1."
    )
    RAW_FIELDS = (
        "name", "description", "type", "matcher", "prompt", "command", "script", "timeout", "failMode",
        "maxRejections", "expiresIn", "approvalsRequired",
    )  # fmt: skip
    _JUDGED = ("prompt", "command")
    _PROMPT = FieldScope(types=("prompt",), hint="Prompt hooks only.")
    _COMMAND = FieldScope(types=("command",), hint="Command hooks only.")
    _APPROVAL = FieldScope(types=("approval",), hint="Approval hooks (PreToolUse) only.")
    # Which hooks each field applies to; a field not named here applies to every hook.
    FIELD_SCOPES = {
        "matcher": FieldScope(events=MATCHER_EVENTS, hint="Not used by Stop hooks."),
        "prompt": _PROMPT,
        "model": _PROMPT,
        "model_deployment": _PROMPT,
        "command": _COMMAND,
        "script": _COMMAND,
        "timeout": FieldScope(types=_JUDGED, hint="Prompt and command hooks only."),
        "failMode": FieldScope(types=_JUDGED, hint="Prompt and command hooks only."),
        "maxRejections": FieldScope(
            types=("prompt",), events=("Stop",), hint="Prompt hooks on Stop only."
        ),
        "expiresIn": _APPROVAL,
        "approvalsRequired": _APPROVAL,
        "recordReason": FieldScope(types=_JUDGED, hint="Prompt and command hooks only."),
    }

    def __init__(self, *args: Any, hook: Hook | None = None, **kwargs: Any) -> None:
        if hook is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(hook)
        super().__init__(*args, **kwargs)
        # What "disabled" keeps as the mode, so enabling the hook again restores it.
        self.kept_mode = hook.mode if hook is not None else "enforce"
        if hook is not None:
            self.fields["event"].disabled = True

    def _chosen(self, name: str, default: str) -> str:
        if self.is_bound and not self.fields[name].disabled:
            return str(self.data.get(name) or default)
        return str(self.initial.get(name) or self.fields[name].initial or default)

    def field_applies(self, name: str) -> bool:
        """Whether `name` applies to the event and type the form holds now."""
        scope = self.FIELD_SCOPES.get(name)
        return scope is None or scope.covers(
            self._chosen("event", "Stop"), self._chosen("type", "prompt")
        )

    def field_for_pointer(self, pointer: str) -> str | None:
        typed = self.data.get("model_deployment") or self.initial.get("model_deployment")
        if pointer == "/model" and typed:
            return "model_deployment"
        return super().field_for_pointer(pointer)

    @staticmethod
    def initial_for(hook: Hook) -> dict[str, Any]:
        initial: dict[str, Any] = {
            **hook.definition,
            "event": hook.event,
            "name": hook.name,
            "description": hook.description,
            "mode": hook.run_mode,
            "recordReason": hook.record_reason,
        }
        model = initial.get("model")
        if model and model not in MODEL_TIERS:
            initial["model"], initial["model_deployment"] = "", model
        return initial

    def clean(self) -> dict[str, Any]:
        """Build the raw hook dict from the filled fields only (blank means: use the default)."""
        data = super().clean() or {}
        raw: dict[str, Any] = {}
        for name in self.RAW_FIELDS:
            value = data.get(name)
            if value is None or value == "":
                continue
            raw[name] = _lf(value) if name in ("prompt", "command", "script") else value
        model = data.get("model_deployment") or data.get("model")
        if data.get("model_deployment") and data.get("model"):
            self.add_error("model_deployment", "Choose a tier or type a deployment name, not both.")
        elif model:
            raw["model"] = model
        mode = data.get("mode") or "enforce"
        raw["enabled"] = mode != "disabled"
        raw["mode"] = self.kept_mode if mode == "disabled" else mode
        if data.get("recordReason"):
            raw["recordReason"] = True
        data["raw"] = raw
        return data


class AgentCreateForm(ProblemsForm):
    slug = forms.CharField(
        max_length=64, label="Slug", help_text="Letters, digits, '_', '-', '.'; used in URLs."
    )
    display_name = forms.CharField(max_length=200, required=False, label="Display name")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class AgentSettingsForm(ProblemsForm):
    display_name = forms.CharField(max_length=200, required=False, label="Display name")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    webhook_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label="Webhook URL",
        help_text="Optional: notified of new escalations.",
    )
    webhook_format = forms.ChoiceField(
        choices=cast("list[tuple[str, str]]", Agent._meta.get_field("webhook_format").choices),
        label="Webhook format",
    )


class ModeForm(forms.Form):
    mode = forms.CharField()


class CustomAgentForm(ProblemsForm):
    name = forms.CharField(max_length=64, help_text="Letters, digits, '_', '-', '.'.")
    instructions = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 5})
    )
    handoff_description = forms.CharField(
        required=False, label="Handoff description", widget=forms.Textarea(attrs={"rows": 2})
    )
    enable_vanilla_mode = forms.BooleanField(required=False, label="Vanilla mode")

    def clean_instructions(self) -> str:
        return _lf(self.cleaned_data["instructions"])


class CustomAgentSettingsForm(CustomAgentForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.fields["name"]


class DocumentForm(ProblemsForm):
    """A v2 document as YAML or JSON text, pasted or uploaded; errors stay keyed by pointer."""

    file = forms.FileField(required=False, label="Upload a .yaml or .json file")
    text = forms.CharField(
        required=False,
        strip=False,
        label="…or paste the document (YAML or JSON)",
        widget=forms.Textarea(attrs={"class": "code", "rows": 10, "spellcheck": "false"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pointer_errors: dict[str, list[str]] = {}
        self.pointer_warnings: dict[str, list[str]] = {}

    def add_problems(self, exc: DomainError) -> None:
        self.pointer_errors = exc.fields
        self.pointer_warnings = exc.warnings if isinstance(exc, InvalidInput) else {}
        self.add_error(None, f"{exc.message} Nothing was saved.")

    def field_for_pointer(self, pointer: str) -> str | None:
        return None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload is not None:
            if upload.size > IMPORT_MAX_BYTES:
                raise forms.ValidationError("The file is larger than 1 MiB.")
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        else:
            text = data.get("text") or ""
        if not text.strip():
            raise forms.ValidationError("Paste a document or choose a file.")
        data["source"] = text
        try:
            data["document"] = _parse_document(text)
        except InvalidInput as exc:
            self.pointer_errors = exc.fields
            raise forms.ValidationError(f"{exc.message} Nothing was saved.") from None
        metadata = data["document"].get("metadata") if isinstance(data["document"], dict) else None
        name = metadata.get("name") if isinstance(metadata, dict) else None
        data["name"] = name if isinstance(name, str) else ""
        return data


class YamlForm(DocumentForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.fields["file"]
        self.fields["text"].label = "Document (YAML or JSON)"
        self.fields["text"].widget.attrs["rows"] = 26


def _parse_document(text: str) -> Any:
    """The same bounded parsing as the API's (console.parsers): JSON if it looks like it."""
    try:
        if text.lstrip().startswith("{"):
            return ensure_storable(json_loads(text))
        return ensure_storable(yaml_loads(text))
    except RecursionError:
        raise forms.ValidationError(TOO_DEEP) from None
    except yaml.YAMLError as exc:
        raise forms.ValidationError(f"Malformed YAML: {exc}") from None
    except ValueError as exc:
        raise forms.ValidationError(f"Malformed JSON: {exc}") from None


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, required=False, help_text="What will use it, e.g. prod-runner."
    )
