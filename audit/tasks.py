"""Celery tasks of the audit app: sealing the record chains, verifying them on request and
enforcing retention."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from audit import chain, services, verification


@shared_task(name="audit.tasks.records_seal_chain", ignore_result=True)
def records_seal_chain(agent_id: int | None = None) -> int:
    """Seal pending records of one agent (after an ingest commit) or of all (beat)."""
    if agent_id is None:
        return chain.chain_seal_all()
    return chain.chain_seal(agent_id)


@shared_task(name="audit.tasks.records_purge_expired", ignore_result=True)
def records_purge_expired() -> int:
    """Delete records older than CONSOLE_RECORD_RETENTION_DAYS (one governance event per
    agent and run)."""
    cutoff = timezone.now() - timedelta(days=settings.CONSOLE_RECORD_RETENTION_DAYS)
    return services.records_purge(actor=None, before=cutoff)


@shared_task(name="audit.tasks.records_verify_chain", ignore_result=True)
def records_verify_chain(verification_id: str) -> None:
    """Run one "Verify chain" request of the audit pages (audit.verification)."""
    verification.chain_verification_run(verification_id)
