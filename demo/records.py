"""Realistic, payload-free interception records for demos, screenshots and page tests.

`record_item` builds one `{"record", "meta"}` ingest item whose wire passes the SDK schema
and, through the real derivation in `audit.record_rows.record_outcome`, lands on the outcome
asked for. `store_items` sends items through the real ingest path (validation, then
`audit.services.records_ingest`). `demo_session_items` writes one whole hooks session as
an SRE agent produces it: agent_startup … agent_shutdown, tool calls, hook blocks,
approval requests and their outcomes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from agents.models import Agent
from audit import ingest, services
from audit.models import Outcome

IDENTITY_PROVIDER = "jcs-sha256"
PROFILE = "sequential/first_deny"

# outcome → (decision, reason, message, resolved_by)
OUTCOME_VERDICTS: dict[str, tuple[str, str | None, str | None, str | None]] = {
    Outcome.ALLOWED: ("allow", None, None, None),
    Outcome.WARNED: (
        "allow",
        "console:stop_rejected",
        "Please end your response with 'Task complete.'",
        None,
    ),
    Outcome.DENIED: (
        "deny",
        "console:hook_blocked",
        "Dangerous command blocked: rm -rf is not allowed.",
        None,
    ),
    Outcome.TRANSFORMED: ("transform", "console:additional_context", None, None),
    Outcome.APPROVED: (
        "allow",
        "console:approval_required",
        "A reviewer approved this call.",
        "approval",
    ),
    Outcome.REJECTED: (
        "deny",
        "reviewer_rejected",
        "Rejected by a reviewer: not during business hours.",
        "rejection",
    ),
    Outcome.EXPIRED: (
        "deny",
        "approval_expired",
        "No reviewer decided before the expiry.",
        "rejection",
    ),
    Outcome.HOST_ERROR: ("deny", "host_error: interceptor timeout after 5 s", None, None),
}


def _identity(*parts: Any) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


def record_item(
    *,
    session_id: str,
    sequence: int,
    point: str,
    at: dt.datetime,
    outcome: str = Outcome.ALLOWED,
    mode: str = "enforce",
    tool_name: str = "",
    custom_agent: str = "",
    hooks: tuple[str, ...] = (),
    deciding_hook: str | None = None,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """One ingest item for the given outcome. `hooks` are the hook ids that ran (their
    verdict summaries are included); `deciding_hook` (default: the last of them) decided a
    non-allow outcome. `reason`/`message` override the outcome's defaults."""
    decision, default_reason, default_message, resolved_by = OUTCOME_VERDICTS[outcome]
    reason = reason if reason is not None else default_reason
    message = message if message is not None else default_message
    verdict: dict[str, Any] = {"decision": decision}
    if reason:
        verdict["reason"] = reason
    if message:
        verdict["message"] = message
    if outcome == Outcome.WARNED:
        verdict["warnings"] = [{"reason": reason, "message": message}]
    if decision == "transform":
        verdict["transform"] = {"path": "$target"}
    deciding = deciding_hook or (hooks[-1] if hooks and outcome != Outcome.ALLOWED else None)
    verdicts = []
    decided_by = None
    for index, key in enumerate(hooks):
        summary: dict[str, Any] = {"index": index, "decision": "allow", "name": key}
        if key == deciding:
            summary["decision"] = "allow" if decision == "allow" else decision
            summary["reason"] = reason
            if not (reason or "").startswith("host_error:"):
                decided_by = index
        verdicts.append(summary)
    record: dict[str, Any] = {
        "interception_point": point,
        "mode": mode,
        "verdict": verdict,
        "input_identity": _identity(session_id, sequence, "in"),
        "enforced_identity": _identity(session_id, sequence, "out"),
        "identity_provider": IDENTITY_PROVIDER,
        "session_id": session_id,
        "sequence": sequence,
        "timestamp": at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
        "decided_by": decided_by,
        "composition": {"profile": PROFILE, "on_approval": "stop"},
        "verdicts": verdicts,
        "fold_truncated": decision == "deny" and len(hooks) > 1 and deciding != hooks[-1],
        "interceptors_registered": max(len(hooks), 1),
        "declaration": "agent-hooks-declaration/1.0",
    }
    if resolved_by:
        record["resolved_by"] = resolved_by
    meta: dict[str, Any] = {"framework": "agent-framework", "revision": "3"}
    if tool_name:
        meta["tool_name"] = tool_name
    if custom_agent:
        meta["custom_agent"] = custom_agent
    return {"record": record, "meta": meta}


def store_items(agent: Agent, items: list[dict[str, Any]]) -> services.IngestResult:
    """Validate and store items exactly as `POST /api/v1/records` does, in batches."""
    result = services.IngestResult(accepted=0, duplicates=0)
    for start in range(0, len(items), ingest.MAX_BATCH):
        valid = ingest.batch_items(items[start : start + ingest.MAX_BATCH])
        stored = services.records_ingest(actor=None, agent=agent, items=valid)
        result = services.IngestResult(
            accepted=result.accepted + stored.accepted,
            duplicates=result.duplicates + stored.duplicates,
        )
    return result


@dataclass
class HookKeys:
    """The hook ids a demo agent runs, by role."""

    audit: str = "hk_audit000001"
    stop: str = "hk_stop0000001"
    approval: str = "hk_approval001"
    danger: str = "hk_danger00001"


@dataclass
class ApprovalStep:
    """An approval request inside a demo session, to be created through approvals."""

    tool_name: str
    outcome: str
    at: dt.datetime
    wait_seconds: float
    sequence: int
    hook: str


@dataclass
class _Cursor:
    seq: int
    at: dt.datetime


@dataclass
class DemoSession:
    session_id: str
    items: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[ApprovalStep] = field(default_factory=list)


SAFE_TOOLS = ("query_metrics", "read_logs", "list_pods", "get_incident")
SHELL_TOOLS = ("ExecuteShellCommand", "Bash")
APPROVAL_TOOLS = ("restart_service", "scale_deployment")
DANGER_MESSAGES = (
    "Dangerous command blocked: rm -rf is not allowed.",
    "Dangerous command blocked: sudo is not allowed.",
    "Dangerous command blocked: chmod 777 is not allowed.",
)


def demo_session_items(
    rng: random.Random,
    *,
    session_id: str,
    start: dt.datetime,
    mode: str,
    keys: HookKeys,
    custom_agent: str = "",
    drop_sequences: int = 0,
) -> DemoSession:
    """One session: startup, input, 1–4 tool calls with their model turns, the Stop check
    (sometimes rejected once), shutdown. `drop_sequences` leaves a gap, as a lost batch does."""
    session = DemoSession(session_id)
    state = _Cursor(seq=0, at=start)

    def emit(point: str, outcome: str = Outcome.ALLOWED, **kwargs: Any) -> None:
        state.at = state.at + dt.timedelta(milliseconds=rng.randint(150, 4000))
        session.items.append(
            record_item(
                session_id=session_id,
                sequence=state.seq,
                point=point,
                at=state.at,
                outcome=outcome,
                mode=mode,
                custom_agent=custom_agent,
                **kwargs,
            )
        )
        state.seq += 1

    emit("agent_startup")
    emit("input")
    for call in range(rng.randint(1, 4)):
        emit("pre_model_call", Outcome.TRANSFORMED if call else Outcome.ALLOWED)
        emit("post_model_call")
        kind = rng.choices(("safe", "shell", "approval"), weights=(5, 3, 2))[0]
        tool = rng.choice(
            {"safe": SAFE_TOOLS, "shell": SHELL_TOOLS, "approval": APPROVAL_TOOLS}[kind]
        )
        if kind == "approval":
            outcome = rng.choices(
                (Outcome.APPROVED, Outcome.REJECTED, Outcome.EXPIRED), weights=(6, 2, 1)
            )[0]
            wait = 600.0 if outcome == Outcome.EXPIRED else rng.lognormvariate(3.3, 0.8)
            emit("pre_tool_call", outcome, tool_name=tool, hooks=(keys.approval,))
            # The record carries the context's time; the escalation is opened just after.
            asked = state.at + dt.timedelta(milliseconds=40)
            session.approvals.append(
                ApprovalStep(tool, outcome, asked, wait, state.seq - 1, keys.approval)
            )
            state.at = asked + dt.timedelta(seconds=wait)
            if outcome != Outcome.APPROVED:
                continue
        else:
            emit("pre_tool_call", tool_name=tool, hooks=(keys.approval,))
        hooks = (keys.audit, keys.danger) if kind == "shell" else (keys.audit,)
        roll = rng.random()
        if kind == "shell" and roll < 0.35:
            emit(
                "post_tool_call",
                Outcome.DENIED,
                tool_name=tool,
                hooks=hooks,
                message=rng.choice(DANGER_MESSAGES),
            )
        elif roll > 0.96:
            emit(
                "post_tool_call",
                Outcome.HOST_ERROR,
                tool_name=tool,
                hooks=hooks,
                deciding_hook=hooks[-1],
                reason=rng.choice(
                    (
                        "host_error: interceptor timeout after 5 s",
                        "host_error: hook script exited with status 1",
                    )
                ),
            )
            # The demo ends the session here, as a `terminate` host would (console_client
            # declares `continue`: docs/conformance.md, deliberate difference 9).
            emit("agent_shutdown")
            return session
        else:
            emit("post_tool_call", tool_name=tool, hooks=hooks)
        if drop_sequences and call == 0:
            state.seq += drop_sequences
    emit("pre_model_call", Outcome.TRANSFORMED)
    emit("post_model_call")
    if rng.random() < 0.3:
        emit("output", Outcome.WARNED, hooks=(keys.stop,))
        emit("pre_model_call")
        emit("post_model_call")
    emit("output", hooks=(keys.stop,))
    emit("agent_shutdown")
    return session
