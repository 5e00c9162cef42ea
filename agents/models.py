"""Agents hold hooks at two levels: the agent itself and each of its custom agents."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
name_validator = RegexValidator(
    NAME_PATTERN, "Use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit."
)


def new_hook_key() -> str:
    return f"hk_{secrets.token_hex(6)}"


class Mode(models.TextChoices):
    ENFORCE = "enforce", "Enforce"
    EVALUATE_ONLY = "evaluate_only", "Evaluate only"


class HookMode(models.TextChoices):
    """How a hook's verdict counts. `enabled=False` keeps a hook without running it at all."""

    ENFORCE = "enforce", "Enforce"
    SHADOW = "shadow", "Shadow"


class WebhookFormat(models.TextChoices):
    JSON = "json", "Generic JSON"
    SLACK = "slack", "Slack-compatible"


class Event(models.TextChoices):
    STOP = "Stop", "Stop"
    POST_TOOL_USE = "PostToolUse", "PostToolUse"
    PRE_TOOL_USE = "PreToolUse", "PreToolUse"


class Agent(models.Model):
    slug = models.CharField(max_length=64, unique=True, validators=[name_validator])
    display_name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.ENFORCE)
    # Bumped by every configuration change of the agent or any custom agent of it.
    revision = models.PositiveIntegerField(default=0)
    webhook_url = models.URLField(blank=True, help_text="Optional: notified of new escalations.")
    webhook_format = models.CharField(
        max_length=16,
        choices=WebhookFormat.choices,
        default=WebhookFormat.JSON,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_enforced(self) -> bool:
        return self.mode == Mode.ENFORCE


class CustomAgent(models.Model):
    # Indexed by custom_agent_unique_name, which leads with it.
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="custom_agents", db_index=False
    )
    name = models.CharField(max_length=64, validators=[name_validator])
    instructions = models.TextField(blank=True)
    handoff_description = models.TextField(blank=True)
    enable_vanilla_mode = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="custom_agent_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.agent.slug}/{self.name}"


class Hook(models.Model):
    """One hook. `definition` is the validated hook object with defaults filled in; the
    name (unique in its scope, case-insensitively), description and mode live beside it."""

    key = models.CharField(max_length=32, unique=True, default=new_hook_key, editable=False)
    name = models.CharField(max_length=80)
    description = models.TextField(blank=True, default="")
    # Indexed by (agent, custom_agent, event, position), which leads with it.
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="hooks", db_index=False)
    custom_agent = models.ForeignKey(
        CustomAgent, on_delete=models.CASCADE, null=True, blank=True, related_name="hooks"
    )
    event = models.CharField(max_length=16, choices=Event.choices)
    position = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    mode = models.CharField(max_length=16, choices=HookMode.choices, default=HookMode.ENFORCE)
    # Opt-in: the records keep this hook's own reason text (bounded by the SDK to 256 bytes),
    # a payload trade-off an admin makes per hook (docs/audit-storage.md). Off by default.
    record_reason = models.BooleanField(default=False)
    # Who turned record_reason on last (kept when it is turned off: old records still say).
    record_reason_by = models.CharField(max_length=150, blank=True, default="")
    definition = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["event", "position", "id"]
        indexes = [models.Index(fields=["agent", "custom_agent", "event", "position"])]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                "agent",
                condition=Q(custom_agent__isnull=True),
                name="hook_unique_name_agent_level",
            ),
            models.UniqueConstraint(
                Lower("name"),
                "custom_agent",
                condition=Q(custom_agent__isnull=False),
                name="hook_unique_name_custom_agent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"

    @property
    def hook_type(self) -> str:
        return str(self.definition.get("type", "prompt"))

    @property
    def run_mode(self) -> str:
        """enforce, shadow or disabled: what the hook does now, in one word."""
        return self.mode if self.enabled else "disabled"


class ConfigRevision(models.Model):
    """A snapshot of one scope (the agent level, or one custom agent) after a change."""

    class Scope(models.TextChoices):
        AGENT = "agent", "Agent level"
        CUSTOM_AGENT = "custom_agent", "Custom agent"

    # Indexed by revision_unique_number, which leads with it.
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="revisions", db_index=False
    )
    scope = models.CharField(max_length=16, choices=Scope.choices)
    # Kept as a name, not a foreign key, so history survives a deleted custom agent.
    custom_agent_name = models.CharField(max_length=64, blank=True)
    number = models.PositiveIntegerField()
    action = models.CharField(max_length=64)
    summary = models.CharField(max_length=300)
    snapshot = models.JSONField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    actor_label = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="revision_unique_number")
        ]
        indexes = [models.Index(fields=["agent", "scope", "custom_agent_name", "-number"])]

    def __str__(self) -> str:
        return f"{self.agent.slug} r{self.number} {self.action}"


class AgentToken(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent.slug} · {self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Runtime(models.TextChoices):
    """Agent runtimes governed through their own hooks (POST /api/v1/hooks/{runtime})."""

    CLAUDE_CODE = "claude-code", "Claude Code"
    CODEX = "codex", "Codex CLI"
    GEMINI_CLI = "gemini-cli", "Gemini CLI"
    CURSOR = "cursor", "Cursor"
    COPILOT = "copilot", "GitHub Copilot"


class RuntimeSession(models.Model):
    """One session of another agent runtime that reached a Stop: the Stop rejections in a
    row, which bound a Stop hook that always rejects (each hook call is its own request)."""

    # Indexed by runtime_session_unique_per_agent, which leads with it.
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="runtime_sessions", db_index=False
    )
    runtime = models.CharField(max_length=16, choices=Runtime.choices)
    session_id = models.CharField(max_length=200)
    stop_rejection_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "session_id"], name="runtime_session_unique_per_agent"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.runtime}:{self.session_id}"


class SampleVerdict(models.TextChoices):
    """What a saved sample expects "Test this hook" to say."""

    ALLOW = "allow", "allow"
    BLOCK = "block", "block"
    ASK = "ask", "ask a reviewer"
    NOT_RUN = "not_run", "does not run"


class HookSample(models.Model):
    """A named sample context of one hook and the verdict it should give; the samples of a
    hook are re-run together before a change to it is saved."""

    # Indexed by hook_sample_name_unique, which leads with it.
    hook = models.ForeignKey(Hook, on_delete=models.CASCADE, related_name="samples", db_index=False)
    name = models.CharField(max_length=80)
    context = models.JSONField()
    expected = models.CharField(max_length=16, choices=SampleVerdict.choices)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["hook", "name"], name="hook_sample_name_unique")
        ]

    def __str__(self) -> str:
        return f"{self.hook.key}: {self.name}"
