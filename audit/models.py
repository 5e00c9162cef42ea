"""Audit storage: payload-free interception records and their hash chain.

`InterceptionRecord` is one row per `InterceptionRecord` wire an agent posted, with the
searched facts as columns and the whole wire in `raw`. Rows are append-only: the
tamper-evidence chain lives beside them in `RecordSeal` (one per sealed record, per-agent
`chain_seq`), `ChainHead` is the per-agent tip and purge checkpoint, and
`RecordSealPending` is the queue of ingested-but-unsealed batches; `RecordExport` is one
export and the manifest of the bytes it sent; `ChainVerification` one "Verify chain" run. See docs/audit-storage.md for the layout, indexes and how it scales.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Lookup
from django.db.models.functions import Lower

from agents.models import Mode
from console import embedded
from console_client.reasons import recorded_reasons

GENESIS_HASH = "0" * 64

if TYPE_CHECKING:
    _ListField = models.Field[list[str], list[str]]
    _StrLookup = Lookup[str]
    _ListLookup = Lookup[list[str]]
else:
    _ListField = models.Field
    _StrLookup = Lookup
    _ListLookup = Lookup


class InterceptionPoint(models.TextChoices):
    AGENT_STARTUP = "agent_startup", "agent_startup"
    INPUT = "input", "input"
    PRE_MODEL_CALL = "pre_model_call", "pre_model_call"
    POST_MODEL_CALL = "post_model_call", "post_model_call"
    PRE_TOOL_CALL = "pre_tool_call", "pre_tool_call"
    POST_TOOL_CALL = "post_tool_call", "post_tool_call"
    OUTPUT = "output", "output"
    AGENT_SHUTDOWN = "agent_shutdown", "agent_shutdown"


class Decision(models.TextChoices):
    ALLOW = "allow", "Allow"
    DENY = "deny", "Deny"
    TRANSFORM = "transform", "Transform"


class Outcome(models.TextChoices):
    """What happened, derived at ingest (see `audit.ingest.record_outcome`)."""

    ALLOWED = "allowed", "Allowed"
    WARNED = "warned", "Warned"
    DENIED = "denied", "Denied"
    TRANSFORMED = "transformed", "Transformed"
    APPROVED = "approved", "Approved by reviewer"
    REJECTED = "rejected", "Rejected by reviewer"
    EXPIRED = "expired", "Approval expired"
    HOST_ERROR = "host_error", "Host error"


class HookIdsField(_ListField):
    """A list of hook ids: `text[]` on PostgreSQL (GIN-indexed), JSON text elsewhere.

    Filter with the `has` lookup: `hook_ids__has="hk_0123abcd"`.
    """

    description = "List of hook ids"

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "text[]" if embedded.database_is_postgresql(connection) else "text"

    def get_db_prep_value(
        self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False
    ) -> Any:
        if value is None:
            return None
        items = [str(item) for item in value]
        return items if embedded.database_is_postgresql(connection) else json.dumps(items)

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> Any:
        if value is None or isinstance(value, list):
            return value
        return json.loads(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value)
        return value


@HookIdsField.register_lookup
class HookIdsHas(_StrLookup):
    """`hook_ids__has=<id>`: the list contains that id (uses the GIN index on PostgreSQL)."""

    lookup_name = "has"
    prepare_rhs = False

    def get_db_prep_lookup(self, value: Any, connection: BaseDatabaseWrapper) -> Any:
        return ("%s", [str(value)])

    def as_sql(self, compiler: Any, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        # lhs/rhs are compiled column references and placeholders, never user text.
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) AS hook WHERE hook.value = {rhs})"  # noqa: S608
        return sql, [*lhs_params, *rhs_params]

    def as_postgresql(self, compiler: Any, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} @> ARRAY[{rhs}]::text[]", [*lhs_params, *rhs_params]


@HookIdsField.register_lookup
class HookIdsHasAny(_ListLookup):
    """`hook_ids__has_any=[ids]`: the list shares an id with `ids` (one array overlap,
    `&&`, on the GIN index on PostgreSQL). `ids` must not be empty."""

    lookup_name = "has_any"
    prepare_rhs = False

    def get_db_prep_lookup(self, value: Any, connection: BaseDatabaseWrapper) -> Any:
        items = [str(item) for item in value]
        if embedded.database_is_postgresql(connection):
            return ("%s", [items])
        return (", ".join(["%s"] * len(items)), items)

    def as_sql(self, compiler: Any, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        # lhs/rhs are compiled column references and placeholders, never user text.
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) AS hook WHERE hook.value IN ({rhs}))"  # noqa: S608
        return sql, [*lhs_params, *rhs_params]

    def as_postgresql(self, compiler: Any, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} && {rhs}::text[]", [*lhs_params, *rhs_params]


class InterceptionRecord(models.Model):
    """One interception record. Never holds the intercepted payload (the SDK schema and the
    ingest checks refuse one); `raw` is the record wire as the agent sent it."""

    # db_index off: the (agent, timestamp, id) index covers agent lookups. No database
    # foreign key: its deferred check per row cost ingest ~3 µs of PostgreSQL's ~25 per
    # record. The batch's seal-queue row keeps one check per batch, and deleting an agent
    # that has records is refused by PROTECT and, on PostgreSQL, by a trigger (migration
    # 0015, docs/audit-storage.md).
    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.PROTECT,
        related_name="interception_records",
        db_index=False,
        db_constraint=False,
    )
    custom_agent = models.CharField(max_length=64, blank=True, default="")
    session_id = models.CharField(max_length=200)
    sequence = models.BigIntegerField()
    interception_point = models.CharField(max_length=16, choices=InterceptionPoint.choices)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    decision = models.CharField(max_length=16, choices=Decision.choices)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    reason = models.TextField(blank=True, default="")
    resolved_by = models.CharField(max_length=16, blank=True, default="")
    decided_by = models.IntegerField(null=True, blank=True)
    # Hook id that decided: verdicts[decided_by].name, or the hook a host error names.
    decided_hook = models.CharField(max_length=128, blank=True, default="")
    fold_truncated = models.BooleanField(null=True, blank=True)
    # "" when the record is identity-unbound (identity_provider null).
    input_identity = models.CharField(max_length=200, blank=True, default="")
    enforced_identity = models.CharField(max_length=200, blank=True, default="")
    # The record's own timestamp, or the received time when the record has none.
    timestamp = models.DateTimeField()
    received_at = models.DateTimeField()
    hook_ids = HookIdsField(default=list, blank=True)
    tool_name = models.CharField(max_length=200, blank=True, default="")
    framework = models.CharField(max_length=64, blank=True, default="")
    revision = models.CharField(max_length=64, blank=True, default="")
    raw = models.JSONField()

    class Meta:
        ordering = ["-timestamp", "-id"]
        constraints = [
            # Idempotency key; session_id first so it also serves session lookups.
            # `timestamp` is in it because on PostgreSQL the table is partitioned by it
            # (a unique index must hold the partition key); ingest keeps replays exact
            # for records without a timestamp of their own (audit.services).
            models.UniqueConstraint(
                fields=["session_id", "sequence", "agent", "timestamp"], name="record_unique_key"
            )
        ]
        # The PostgreSQL-only GIN index on hook_ids is created by migration 0003 with a
        # vendor check (its BRIN on timestamp was dropped by 0013); see
        # docs/audit-storage.md.
        indexes = [
            models.Index(fields=["timestamp", "id"], name="record_ts_id"),
            models.Index(fields=["agent", "timestamp", "id"], name="record_agent_ts"),
            models.Index(fields=["outcome", "timestamp", "id"], name="record_outcome_ts"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.sequence} {self.interception_point} {self.outcome}"

    @property
    def is_enforced(self) -> bool:
        return self.mode == Mode.ENFORCE

    @property
    def recorded_reasons(self) -> list[tuple[str, str]]:
        """(hook key, text) of the reasons kept for hooks opted in to "record its reason"."""
        return recorded_reasons(self.raw) if isinstance(self.raw, dict) else []


class RecordSeal(models.Model):
    """The record's place in its agent's hash chain.

    chain_hash = sha256(chain_prev + canonical JSON of the record's stored fields), see
    `audit.chain.record_digest_input`.
    """

    # No database-level foreign key: on PostgreSQL the record table is partitioned and
    # `id` alone is not a unique key there (migration 0008). Verification reports a seal
    # whose record is gone as "deleted"; retention removes both in one transaction.
    record = models.OneToOneField(
        InterceptionRecord,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="seal",
        db_constraint=False,
    )
    # No database-level foreign key either: a seal's agent is its record's, which the
    # record's own foreign key holds, and the check cost the sealer about 7-12 µs per seal
    # at commit (deferred trigger per row; docs/audit-storage.md). PROTECT still applies
    # to deletes through Django.
    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    chain_seq = models.BigIntegerField()
    chain_prev = models.CharField(max_length=64)
    chain_hash = models.CharField(max_length=64)
    sealed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "chain_seq"], name="seal_unique_agent_seq")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.chain_seq} {self.chain_hash[:12]}"


class ChainHead(models.Model):
    """Per-agent chain tip (`last_*`) and purge checkpoint (`base_*`): verification walks
    base_seq+1 … last_seq starting from base_hash. Sealers lock this row."""

    agent = models.OneToOneField(
        "agents.Agent", on_delete=models.PROTECT, primary_key=True, related_name="+"
    )
    last_seq = models.BigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default=GENESIS_HASH)
    base_seq = models.BigIntegerField(default=0)
    base_hash = models.CharField(max_length=64, default=GENESIS_HASH)
    purged = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.base_seq}..{self.last_seq}"


class RecordSealPending(models.Model):
    """Ids of one ingest batch's newly stored records, waiting to be sealed."""

    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    record_ids = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["agent", "id"], name="seal_pending_agent")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {len(self.record_ids)} pending"


class DeadLetterReport(models.Model):
    """One batch of records the console refused, as its agent reported it: the agent keeps
    the records in its dead-letter file (console_client.records) and tells the console how
    many there were and why, so the loss is visible on the agent's page. Idempotent on
    (agent, batch)."""

    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    batch = models.CharField(max_length=64)
    records = models.PositiveIntegerField()
    status = models.PositiveSmallIntegerField()
    error = models.CharField(max_length=1000, blank=True)
    refused_at = models.DateTimeField()
    reported_at = models.DateTimeField()

    class Meta:
        ordering = ["-refused_at", "-id"]
        constraints = [
            # Also the index of the agent page's lookups (agent first).
            models.UniqueConstraint(fields=["agent", "batch"], name="deadletter_unique_batch")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.records} refused ({self.status})"


class ExportFormat(models.TextChoices):
    CSV = "csv", "CSV"
    JSONL = "jsonl", "JSON Lines"


class RecordExport(models.Model):
    """One export of records: who asked for which filter when, and, once the stream has
    produced its last byte, the manifest of exactly the bytes sent (rows, size, SHA-256),
    so that a downloaded file can be checked for truncation (audit.export)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    actor_label = models.CharField(max_length=150)
    format = models.CharField(max_length=8, choices=ExportFormat.choices)
    filter = models.JSONField(default=dict)
    generated_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    rows = models.BigIntegerField(null=True, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"export {self.pk} ({self.format}) by {self.actor_label}"


class ChainVerificationStatus(models.TextChoices):
    RUNNING = "running", "Running"
    OK = "ok", "Every chain holds"
    BROKEN = "broken", "A chain is broken"
    FAILED = "failed", "Could not finish"


class ChainVerification(models.Model):
    """One "Verify chain" run from the audit pages (audit.verification): the scope (one
    agent's slug, or empty for every agent with records), and when it ends the report of
    `audit.chain.chain_verify` per agent in `results`: `[{"agent", "verified", "pending",
    "problem": {"kind", "chain_seq", "record_id", "detail"} | null}]`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    actor_label = models.CharField(max_length=150)
    agent_slug = models.CharField(max_length=64, blank=True)
    status = models.CharField(
        max_length=16,
        choices=ChainVerificationStatus.choices,
        default=ChainVerificationStatus.RUNNING,
    )
    requested_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    results = models.JSONField(default=list)
    error = models.CharField(max_length=500, blank=True)

    def __str__(self) -> str:
        return f"chain verification {self.pk} ({self.status})"


class RollupGrain(models.IntegerChoices):
    """Bucket size of a rollup row (see audit.rollups)."""

    MINUTE = 1, "minute"
    HOUR = 2, "hour"
    DAY = 3, "day"


class RecordRollup(models.Model):
    """How many records (and of them agent_startup records) fell in one time bucket, per
    agent, outcome and mode: what the dashboard counts, kept current by the sealer (each
    record is added in the transaction that seals it) and by retention (subtracted in the
    transaction that deletes it). See audit.rollups and docs/audit-storage.md."""

    grain = models.PositiveSmallIntegerField(choices=RollupGrain.choices)
    bucket = models.DateTimeField()
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    records = models.BigIntegerField(default=0)
    startups = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # Also the dashboard's index: grain, then a bucket range.
            models.UniqueConstraint(
                fields=["grain", "bucket", "agent", "outcome", "mode"], name="rollup_unique_key"
            )
        ]
        # The one-agent dashboard: its rows without walking every agent's.
        indexes = [models.Index(fields=["grain", "agent", "bucket"], name="rollup_agent_key")]

    def __str__(self) -> str:
        return f"{self.get_grain_display()} {self.bucket:%Y-%m-%d %H:%M} {self.outcome}: {self.records}"


class RecordProblemRollup(models.Model):
    """The blocking and failing records (denied, rejected, expired, host_error) of one time
    bucket per agent, outcome, deciding hook, reason and verdict message: the dashboard's
    deny-reason and problem-hook cards. `detail` is the md5 of [decided_hook, reason,
    message], the unique key's stand-in for the long texts."""

    grain = models.PositiveSmallIntegerField(choices=RollupGrain.choices)
    bucket = models.DateTimeField()
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    detail = models.CharField(max_length=32)
    decided_hook = models.CharField(max_length=128, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    message = models.TextField(blank=True, default="")
    records = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["grain", "bucket", "agent", "outcome", "detail"],
                name="problem_rollup_unique_key",
            )
        ]
        indexes = [
            models.Index(fields=["grain", "agent", "bucket"], name="problem_rollup_agent_key")
        ]

    def __str__(self) -> str:
        return f"{self.get_grain_display()} {self.bucket:%Y-%m-%d %H:%M} {self.outcome} {self.reason}: {self.records}"


SAVED_VIEWS_PER_USER = 50


class SavedView(models.Model):
    """An auditor's named record filter: `query` is the explorer's query string (filters
    and period, never a cursor), so opening it re-runs the search; a relative `range`
    stays relative. Names are unique per owner, case-insensitively (audit.saved_views)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    name = models.CharField(max_length=80)
    query = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # Also the index of the owner's list (owner first).
            models.UniqueConstraint("owner", Lower("name"), name="savedview_unique_owner_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner_id})"
