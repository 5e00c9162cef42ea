"""OpenAPI shapes of the agents API (documentation only: agents.validation is what checks
a document, with errors keyed by JSON pointer).

Requests may leave out what has a default; responses always carry the defaults filled in.
The limits shown (hooks per event, text sizes) are agents.validation's; text sizes are
UTF-8 bytes there, shown here as lengths.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from agents.hook_names import DESCRIPTION_MAX_CHARS, HOOK_MODES, NAME_MAX_CHARS
from agents.validation import (
    API_VERSION,
    APPROVALS_MAX,
    APPROVALS_MIN,
    CUSTOM_AGENTS_MAX,
    EXPIRES_MAX,
    EXPIRES_MIN,
    FAIL_MODES,
    HANDOFF_DESCRIPTION_MAX_BYTES,
    HOOK_TYPES,
    HOOKS_PER_EVENT_MAX,
    INSTRUCTIONS_MAX_BYTES,
    KIND,
    MATCHER_MAX_CHARS,
    MAX_REJECTIONS_MAX,
    MAX_REJECTIONS_MIN,
    PROMPT_MAX_BYTES,
    SCRIPT_MAX_BYTES,
    TIMEOUT_MAX,
    TIMEOUT_MIN,
)
from console.parsers import DOCUMENT_MAX_CHARS, DOCUMENT_MAX_NODES

Pointers = serializers.DictField(
    child=serializers.ListField(child=serializers.CharField()),
    required=False,
    help_text="Warnings keyed by JSON pointer (the document was saved).",
)


class HookSerializer(serializers.Serializer[Any]):
    """One hook (its options; `approval` is the console's PreToolUse type)."""

    name = serializers.CharField(
        required=False,
        max_length=NAME_MAX_CHARS,
        help_text="Unique in its scope (case-insensitive); derived from the event and matcher "
        "when absent.",
    )
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=DESCRIPTION_MAX_CHARS
    )
    mode = serializers.ChoiceField(
        choices=HOOK_MODES,
        required=False,
        help_text="enforce (default), or shadow: runs and is recorded as 'would have', never "
        "blocks, escalates or adds context.",
    )
    type = serializers.ChoiceField(choices=HOOK_TYPES, required=False, help_text="Default prompt.")
    matcher = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=MATCHER_MAX_CHARS
    )
    prompt = serializers.CharField(required=False, max_length=PROMPT_MAX_BYTES)
    command = serializers.CharField(required=False, max_length=SCRIPT_MAX_BYTES)
    script = serializers.CharField(required=False, max_length=SCRIPT_MAX_BYTES)
    timeout = serializers.IntegerField(min_value=TIMEOUT_MIN, max_value=TIMEOUT_MAX, required=False)
    failMode = serializers.ChoiceField(choices=FAIL_MODES, required=False)
    model = serializers.CharField(required=False)
    maxRejections = serializers.IntegerField(
        min_value=MAX_REJECTIONS_MIN, max_value=MAX_REJECTIONS_MAX, required=False
    )
    expiresIn = serializers.IntegerField(
        min_value=EXPIRES_MIN, max_value=EXPIRES_MAX, required=False
    )
    approvalsRequired = serializers.IntegerField(
        min_value=APPROVALS_MIN, max_value=APPROVALS_MAX, required=False
    )
    enabled = serializers.BooleanField(required=False, help_text="false: kept, not run.")
    recordReason = serializers.BooleanField(
        required=False,
        help_text="Opt-in (default false; written only when true): records keep this hook's own "
        "reason text (at most 256 bytes), shown to auditors. A payload trade-off: the reason may "
        "quote the payload. Prompt and command hooks.",
    )


class StoredHookSerializer(HookSerializer):
    name = serializers.CharField(max_length=NAME_MAX_CHARS)
    mode = serializers.ChoiceField(choices=HOOK_MODES)
    type = serializers.ChoiceField(choices=HOOK_TYPES)


def _hooks_by_event(hook: type[serializers.Serializer[Any]], name: str) -> Any:
    return type(
        name,
        (serializers.Serializer,),
        {
            "__doc__": f"Hooks by event, each list in its order (at most {HOOKS_PER_EVENT_MAX}).",
            "Stop": hook(many=True, required=False),
            "PostToolUse": hook(many=True, required=False),
            "PreToolUse": hook(many=True, required=False),
        },
    )


HooksSerializer = _hooks_by_event(HookSerializer, "HooksSerializer")
StoredHooksSerializer = _hooks_by_event(StoredHookSerializer, "StoredHooksSerializer")


class MetadataSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=64)


class SpecSerializer(serializers.Serializer[Any]):
    instructions = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=INSTRUCTIONS_MAX_BYTES
    )
    handoffDescription = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=HANDOFF_DESCRIPTION_MAX_BYTES
    )
    enableVanillaMode = serializers.BooleanField(required=False)
    hooks = HooksSerializer(required=False, allow_null=True)


class StoredSpecSerializer(serializers.Serializer[Any]):
    instructions = serializers.CharField(allow_blank=True)
    handoffDescription = serializers.CharField(allow_blank=True)
    enableVanillaMode = serializers.BooleanField()
    hooks = StoredHooksSerializer()


class ExtendedAgentSerializer(serializers.Serializer[Any]):
    api_version = serializers.ChoiceField(choices=[API_VERSION])
    kind = serializers.ChoiceField(choices=[KIND])
    metadata = MetadataSerializer()
    spec = SpecSerializer(required=False, allow_null=True)


ExtendedAgentSerializer.__doc__ = (
    "The ExtendedAgent v2 document (also accepted as application/yaml). An agent has at most "
    f"{CUSTOM_AGENTS_MAX} custom agents; a YAML document may not expand, its aliases and merge "
    f"keys followed, past {DOCUMENT_MAX_NODES} values or {DOCUMENT_MAX_CHARS} characters of text."
)


class StoredExtendedAgentSerializer(serializers.Serializer[Any]):
    api_version = serializers.ChoiceField(choices=[API_VERSION])
    kind = serializers.ChoiceField(choices=[KIND])
    metadata = MetadataSerializer()
    spec = StoredSpecSerializer()


class SavedExtendedAgentSerializer(StoredExtendedAgentSerializer):
    warnings = Pointers


class ExtendedAgentListSerializer(serializers.Serializer[Any]):
    value = StoredExtendedAgentSerializer(many=True)


class HooksDocumentSerializer(serializers.Serializer[Any]):
    hooks = HooksSerializer()


class AgentHooksSerializer(serializers.Serializer[Any]):
    hooks = StoredHooksSerializer()
    warnings = Pointers


class BindingSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    kind = serializers.CharField()
    config = serializers.DictField()
    at = serializers.ListField(child=serializers.CharField(), required=False)
    timeout_ms = serializers.IntegerField(allow_null=True)


class ConsoleExtensionSerializer(serializers.Serializer[Any]):
    agent = serializers.CharField()
    custom_agent = serializers.CharField(allow_null=True)
    revision = serializers.IntegerField()
    digest = serializers.CharField(help_text="sha256 of the document without it; also the ETag.")


class ExtensionsSerializer(serializers.Serializer[Any]):
    console = ConsoleExtensionSerializer()


class HostSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()


class DeclarationSerializer(serializers.Serializer[Any]):
    """The `agent-hooks-declaration/1.0` document the agent side loads with the SDK."""

    declaration = serializers.CharField()
    spec = serializers.CharField()
    id = serializers.CharField()
    host = HostSerializer()
    configuration = serializers.DictField()
    bindings = BindingSerializer(many=True)
    extensions = ExtensionsSerializer()


DOCUMENT_EXAMPLE = OpenApiExample(
    "a custom agent with a Stop and a PostToolUse hook",
    request_only=True,
    value={
        "api_version": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "triage"},
        "spec": {
            "instructions": "You are a helpful assistant.",
            "handoffDescription": "",
            "enableVanillaMode": True,
            "hooks": {
                "Stop": [{"type": "prompt", "prompt": "Does it end with 'Task complete.'?"}],
                "PostToolUse": [
                    {
                        "type": "command",
                        "matcher": "Bash|ExecuteShellCommand",
                        "timeout": 30,
                        "failMode": "block",
                        "command": "exit 0",
                    }
                ],
            },
        },
    },
)
HOOKS_EXAMPLE = OpenApiExample(
    "agent-level hooks",
    request_only=True,
    value={"hooks": {"PreToolUse": [{"type": "approval", "matcher": "restart_service"}]}},
)
