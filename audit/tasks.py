"""Celery tasks of the audit app: sealing the record chains, verifying them on request and
enforcing retention."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from audit import chain, partitions, retention, verification


@shared_task(name="audit.tasks.records_seal_chain", ignore_result=True)
def records_seal_chain(agent_id: int | None = None) -> int:
    """Seal pending records of one agent (after an ingest commit) or of all (beat)."""
    if agent_id is None:
        return chain.chain_seal_all()
    chain.seal_task_started(agent_id)
    return chain.chain_seal(agent_id)


@shared_task(name="audit.tasks.records_purge_expired", ignore_result=True)
def records_purge_expired() -> int:
    """Remove records older than CONSOLE_RECORD_RETENTION_DAYS (a governance event per
    agent and run, and per dropped partition). With monthly partitions (PostgreSQL) only
    whole months past the cutoff go (audit.retention.purge_cutoff)."""
    cutoff = retention.purge_cutoff(timezone.now(), settings.CONSOLE_RECORD_RETENTION_DAYS)
    return retention.records_purge(actor=None, before=cutoff)


@shared_task(name="audit.tasks.records_partitions_ensure", ignore_result=True)
def records_partitions_ensure() -> list[str]:
    """Create the coming months' record partitions (PostgreSQL; nothing elsewhere)."""
    return partitions.partitions_ensure()


@shared_task(name="audit.tasks.records_verify_chain", ignore_result=True)
def records_verify_chain(verification_id: str) -> None:
    """Run one "Verify chain" request of the audit pages (audit.verification)."""
    verification.chain_verification_run(verification_id)
