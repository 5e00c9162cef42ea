"""The governance log's one table."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class GovernanceEvent(models.Model):
    """One console state change, written in the same transaction as the change itself.

    `action` holds a `GovernanceAction` value; the choices are not on the field because the
    catalogue grows with the apps and a choices change would be a migration each time (the
    service refuses values outside the catalogue). `request_id` is the `X-Request-ID` of the
    request (or websocket, or task) that made the change; null for periodic work."""

    at = models.DateTimeField(auto_now_add=True)  # indexed by govevent_at_id, (at, id)
    action = models.CharField(max_length=64, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    actor_label = models.CharField(max_length=150)
    # A lazy reference: the kernel does not import the agents app.
    agent = models.ForeignKey("agents.Agent", on_delete=models.SET_NULL, null=True, blank=True)
    agent_slug = models.CharField(max_length=64, blank=True, db_index=True)
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    summary = models.CharField(max_length=500)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    # What a configuration change changed, field by field: `{"created", "deleted",
    # "settings": [field...], "hooks": [hook change...]}` where a field is `{"name",
    # "before", "after", "was_set", "is_set"}` (agents.governance_changes writes and reads
    # it). Null for other actions and for events written before this column existed.
    changes = models.JSONField(null=True, blank=True)

    class Meta:
        # The table the audit app created: the model moved here, its rows did not.
        db_table = "audit_governanceevent"
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["at", "id"], name="govevent_at_id")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action}"
