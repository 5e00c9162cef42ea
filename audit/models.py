"""Governance events: who changed what in the console. Interception records live here too."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class GovernanceEvent(models.Model):
    """One console state change, written in the same transaction as the change itself."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    actor_label = models.CharField(max_length=150)
    agent = models.ForeignKey("agents.Agent", on_delete=models.SET_NULL, null=True, blank=True)
    agent_slug = models.CharField(max_length=64, blank=True, db_index=True)
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    summary = models.CharField(max_length=500)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action}"
