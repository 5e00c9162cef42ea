"""The `console` approval resolver: escalations decided by reviewers in the console.

`resolve` posts the SDK's ApprovalRequest (as its wire dict) to `POST /api/v1/escalations`
(idempotent on `context_identity`), then long-polls `GET /api/v1/escalations/{id}?wait=N`
until the escalation leaves `pending`:

- approved: APPROVE with the console's resolution wire (re-validated with the SDK types;
  a transform carries reviewer-edited arguments), or a plain allow;
- rejected: REJECT with a deny `reviewer_rejected` whose message is the reviewer's reason;
- expired: REJECT with a deny `approval_expired`; cancelled: `approval_cancelled`.

Anything else (console unreachable, 5xx, broken JSON, an identity that does not echo)
raises, so the SDK fails closed. `request.context` is never mutated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from agent_hooks import ApprovalOutcome, ApprovalRequest, ApprovalResolution, Verdict

log = logging.getLogger(__name__)

LONG_POLL_SECONDS = 30
# How long past `expires_at` the resolver keeps polling before it gives up (and raises).
EXPIRY_GRACE_SECONDS = 60


# An approved escalation may still carry a reject (its edited arguments were purged).
EXPECTED_OUTCOMES = {
    "approved": (ApprovalOutcome.APPROVE, ApprovalOutcome.REJECT),
    "rejected": (ApprovalOutcome.REJECT,),
    "expired": (ApprovalOutcome.REJECT,),
    "cancelled": (ApprovalOutcome.REJECT,),
}


class ResolverError(RuntimeError):
    """The console could not resolve an escalation; the SDK turns this into a deny."""


def approval_request_wire(request: ApprovalRequest) -> dict[str, Any]:
    """The request as approval.schema.json `$defs/request` spells it."""
    return {
        "context_identity": request.context_identity,
        "interception_point": request.interception_point.value,
        "verdict": request.verdict.to_wire(),
        "context": request.context,
    }


def resolution_from_wire(wire: Any, *, expected_identity: str | None) -> ApprovalResolution:
    """Parse the console's resolution wire with the SDK types; raise on anything off."""
    if not isinstance(wire, dict):
        raise ResolverError("resolution is not an object")
    if wire.get("context_identity") != expected_identity:
        raise ResolverError("resolution context_identity does not echo the request")
    try:
        outcome = ApprovalOutcome(wire.get("outcome"))
        verdict = Verdict.from_wire(wire["verdict"]) if wire.get("verdict") is not None else None
        return ApprovalResolution(
            outcome=outcome, context_identity=expected_identity, verdict=verdict
        )
    except (KeyError, ValueError) as exc:
        raise ResolverError(f"resolution is invalid: {exc}") from None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class ConsoleResolver:
    """Async approval resolver registered under the name `console`."""

    def __init__(
        self,
        *,
        http: Callable[[], httpx.AsyncClient],
        meta: Callable[[ApprovalRequest], dict[str, Any]],
        long_poll_seconds: int = LONG_POLL_SECONDS,
    ) -> None:
        self._http = http
        self._meta = meta
        self._wait = long_poll_seconds

    async def resolve(self, request: ApprovalRequest) -> ApprovalResolution:
        identity = request.context_identity
        body = {"request": approval_request_wire(request), "meta": self._meta(request)}
        created = await self._json("POST", "/api/v1/escalations", json=body, ok=(200, 201))
        escalation_id = created.get("id")
        if escalation_id is None:
            raise ResolverError("escalation answer has no id")
        deadline = _parse_time(created.get("expires_at"))
        status = created.get("status")
        answer = created
        while status == "pending":
            if deadline is not None:
                overdue = (datetime.now(UTC) - deadline).total_seconds()
                if overdue > EXPIRY_GRACE_SECONDS:
                    raise ResolverError("escalation stayed pending past its expiry")
            answer = await self._json(
                "GET",
                f"/api/v1/escalations/{escalation_id}",
                params={"wait": self._wait},
                ok=(200,),
            )
            status = answer.get("status")
        return self._resolution(status, answer, identity)

    @staticmethod
    def _resolution(
        status: Any, answer: dict[str, Any], identity: str | None
    ) -> ApprovalResolution:
        if status not in EXPECTED_OUTCOMES:
            raise ResolverError(f"unexpected escalation status {status!r}")
        wire = answer.get("resolution")
        if wire is not None:
            resolution = resolution_from_wire(wire, expected_identity=identity)
            if resolution.outcome not in EXPECTED_OUTCOMES[status]:
                raise ResolverError(f"a {status} escalation carried a {resolution.outcome.value}")
            return resolution
        reason = answer.get("reason") or None
        if status == "approved":
            return ApprovalResolution(ApprovalOutcome.APPROVE, identity, Verdict.allow())
        deny = {
            "rejected": Verdict.deny(
                reason="reviewer_rejected", message=reason or "A reviewer rejected this call."
            ),
            "expired": Verdict.deny(
                reason="approval_expired", message="No reviewer decided before the expiry."
            ),
            "cancelled": Verdict.deny(
                reason="approval_cancelled", message=reason or "The escalation was cancelled."
            ),
        }[status]
        return ApprovalResolution(ApprovalOutcome.REJECT, identity, deny)

    async def _json(
        self, method: str, path: str, *, ok: tuple[int, ...], **kwargs: Any
    ) -> dict[str, Any]:
        async with self._http() as client:
            try:
                response = await client.request(method, path, **kwargs)
            except (TimeoutError, httpx.HTTPError) as exc:
                raise ResolverError(f"console unreachable: {type(exc).__name__}") from None
        if response.status_code not in ok:
            raise ResolverError(f"console answered {response.status_code} to {method} {path}")
        try:
            data = response.json()
        except ValueError:
            raise ResolverError("console answer is not JSON") from None
        if not isinstance(data, dict):
            raise ResolverError("console answer is not an object")
        return data
