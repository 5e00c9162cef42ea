"""Escalations (a liftable deny waiting for reviewers), their votes, and reviewer scopes.

Metadata (who, what tool, when, outcome) is kept; the payload (request context, arguments,
transcript, edited arguments, the escalating message) is purged a while after the decision.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class EscalationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    CANCELLED = "cancelled", "Cancelled"


class VoteOutcome(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"


class Escalation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: (agent, status, -created_at) leads with it. A second one on agent
    # alone is not only redundant: on a table the planner has no statistics for yet, it
    # ties with the unique (agent, context_identity) index and wins, and the identity look-up
    # of every new escalation then scans all of that agent's rows.
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="escalations", db_index=False
    )
    custom_agent_name = models.CharField(max_length=64, blank=True)
    # Kept as a key too, so history survives a deleted hook.
    hook = models.ForeignKey("agents.Hook", on_delete=models.SET_NULL, null=True, blank=True)
    hook_key = models.CharField(max_length=32, blank=True)
    # Opaque, echoed byte for byte in the resolution. None (identity provider "null") differs
    # from "" and must echo as None, hence a nullable text field.
    context_identity = models.TextField(null=True, blank=True)  # noqa: DJ001
    interception_point = models.CharField(max_length=32)
    tool_name = models.CharField(max_length=200, blank=True)
    session_id = models.CharField(max_length=200, blank=True)
    turn = models.PositiveIntegerField(null=True, blank=True)
    framework = models.CharField(max_length=64, blank=True)
    # Where an agent runtime (Claude Code, Codex, ...) was working when it asked.
    cwd = models.CharField(max_length=1024, blank=True)
    revision = models.PositiveIntegerField(null=True, blank=True)
    verdict_reason = models.CharField(max_length=200, blank=True)
    approvals_required = models.PositiveSmallIntegerField(default=1)
    expires_at = models.DateTimeField()
    status = models.CharField(
        max_length=16, choices=EscalationStatus.choices, default=EscalationStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    decided_by_label = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    # A reviewer changed the tool arguments: the agent runs a transform (the value is payload).
    arguments_edited = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    payload_purged_at = models.DateTimeField(null=True, blank=True)

    # Payload: purged CONSOLE_ESCALATION_PURGE_DAYS after the decision.
    context = models.JSONField(null=True, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    verdict_message = models.TextField(blank=True)
    transcript = models.TextField(blank=True)
    tool_schema = models.JSONField(null=True, blank=True)
    approved_arguments = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "context_identity"],
                condition=Q(context_identity__isnull=False),
                name="escalation_unique_identity_per_agent",
            )
        ]
        indexes = [
            models.Index(fields=["status", "expires_at"]),
            models.Index(fields=["agent", "status", "-created_at"]),
            models.Index(fields=["decided_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.tool_name or self.interception_point} {self.status}"

    @property
    def is_pending(self) -> bool:
        return self.status == EscalationStatus.PENDING

    @property
    def payload_purged(self) -> bool:
        return self.payload_purged_at is not None


class EscalationVote(models.Model):
    """One reviewer's vote; the final approving vote (or any rejection) decides."""

    # Indexed by escalation_vote_one_per_reviewer, which leads with it.
    escalation = models.ForeignKey(
        Escalation, on_delete=models.CASCADE, related_name="votes", db_index=False
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    reviewer_label = models.CharField(max_length=150)
    outcome = models.CharField(max_length=8, choices=VoteOutcome.choices)
    reason = models.TextField(blank=True)
    arguments_edited = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["escalation", "reviewer"], name="escalation_vote_one_per_reviewer"
            )
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_label} {self.outcome}"


class ReviewerScope(models.Model):
    """Restricts a reviewer to some agents. A reviewer with no rows may decide for all agents."""

    # Indexed by reviewer_scope_unique, which leads with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="reviewer_scopes",
        db_index=False,
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["user_id", "agent_id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "agent"], name="reviewer_scope_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} → {self.agent_id}"


class SlackIdentity(models.Model):
    """The Slack member a console reviewer is in the workspace, set by an admin: a click on a
    Slack message's Approve/Reject button acts as this user (docs/slack.md)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="slack_identity"
    )
    slack_user_id = models.CharField(max_length=32, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["user_id"]

    def __str__(self) -> str:
        return f"{self.user_id} ↔ {self.slack_user_id}"
