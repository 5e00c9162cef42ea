"""The "Verify chain" action of the audit pages: the check `manage.py audit_verify` runs
(`audit.chain.chain_verify` over `audit.chain.verifiable_agents`), started by an auditor
and run as a Celery task (inline where Celery is eager, the embedded default), because
walking millions of records takes longer than a request should. The page polls the
`ChainVerification` row for its result.

A run is a governance event (`records.chain_verified`), written with its result in the
transaction that stores it, in the name of the person who asked. A second request for the
same scope while one runs joins it rather than starting another walk.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.chain import ChainReport, chain_verify, verifiable_agents
from audit.models import ChainVerification, ChainVerificationStatus
from console.actors import Actor, actor_label, actor_user
from console.errors import InvalidInput
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record

logger = logging.getLogger(__name__)
# A run older than this still marked running is taken as lost (its worker died).
RUNNING_FOR_AT_MOST = dt.timedelta(hours=1)
BROKEN_SHOWN = 20


def chain_verification_start(*, actor: Actor | None, agent_slug: str = "") -> ChainVerification:
    """Start (or join) a verification of one agent's chain, or of all with `agent_slug`
    empty. Raises InvalidInput (on `agent`) before writing anything."""
    agent_slug = agent_slug.strip()
    if agent_slug and not verifiable_agents(agent_slug).exists():
        raise InvalidInput(f"No agent {agent_slug!r}.", fields={"/agent": ["No such agent."]})
    with transaction.atomic():
        running = (
            ChainVerification.objects.select_for_update()
            .filter(
                agent_slug=agent_slug,
                status=ChainVerificationStatus.RUNNING,
                requested_at__gte=timezone.now() - RUNNING_FOR_AT_MOST,
            )
            .order_by("-requested_at")
            .first()
        )
        if running is not None:
            return running
        verification = ChainVerification.objects.create(
            actor=actor_user(actor), actor_label=actor_label(actor), agent_slug=agent_slug
        )
        transaction.on_commit(lambda: _schedule(verification.pk))
    return verification


def _schedule(verification_id: Any) -> None:
    from audit.tasks import records_verify_chain

    records_verify_chain.delay(str(verification_id))


def _result(report: ChainReport) -> dict[str, Any]:
    problem = report.problem
    return {
        "agent": report.agent_slug,
        "verified": report.verified,
        "pending": report.pending,
        "problem": None
        if problem is None
        else {
            "kind": problem.kind,
            "chain_seq": problem.chain_seq,
            "record_id": problem.record_id,
            "detail": problem.detail,
        },
    }


def _summary(verification: ChainVerification, results: list[dict[str, Any]]) -> str:
    scope = verification.agent_slug or "all agents"
    broken = [item for item in results if item["problem"] is not None]
    if not broken:
        total = sum(item["verified"] for item in results)
        return (
            f"Verified record chains of {scope}: OK, {total:,} records in {len(results)} chain(s)"
        )
    first = broken[0]
    return (
        f"Verified record chains of {scope}: {len(broken)} broken; first "
        f"{first['agent']}: {first['problem']['kind']}: {first['problem']['detail']}"
    )


def chain_verification_run(verification_id: Any) -> ChainVerification | None:
    """The task's body: walk each chain in scope, then store the result and its governance
    event together. None when the run is unknown or already finished."""
    verification = ChainVerification.objects.filter(
        pk=verification_id, status=ChainVerificationStatus.RUNNING
    ).first()
    if verification is None:
        return None
    results: list[dict[str, Any]] = []
    error = ""
    try:
        for agent in verifiable_agents(verification.agent_slug or None):
            results.append(_result(chain_verify(agent)))
    except Exception as exc:  # the page shows it; the log keeps the traceback
        logger.exception("chain verification %s failed", verification.pk)
        error = f"{type(exc).__name__}: {exc}"[:500]
    return _finish(verification, results, error)


@transaction.atomic
def _finish(
    verification: ChainVerification, results: list[dict[str, Any]], error: str
) -> ChainVerification:
    broken = [item for item in results if item["problem"] is not None]
    if error:
        status = ChainVerificationStatus.FAILED
    else:
        status = ChainVerificationStatus.BROKEN if broken else ChainVerificationStatus.OK
    verification.status = status
    verification.results = results
    verification.error = error
    verification.finished_at = timezone.now()
    verification.save(update_fields=["status", "results", "error", "finished_at"])
    summary = _summary(verification, results)
    governance_event_record(
        actor=verification.actor,
        action=GovernanceAction.RECORDS_CHAIN_VERIFIED,
        summary=f"{summary} (could not finish: {error})" if error else summary,
        agent=verifiable_agents(verification.agent_slug).first()
        if verification.agent_slug
        else None,
        target=verification,
        after={
            "agent": verification.agent_slug or None,
            "status": status.value,
            "chains": len(results),
            "verified": sum(item["verified"] for item in results),
            "broken": [
                {"agent": item["agent"], **item["problem"]} for item in broken[:BROKEN_SHOWN]
            ],
        },
    )
    return verification
