"""What running one hook produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HookDecision = Literal["allow", "block", "ask"]


@dataclass(frozen=True)
class HookResult:
    """The outcome of one hook on one context.

    `decision` is what the agent should do (after failMode was applied to any error);
    `error` names the hook error that failMode decided, if there was one; `timed_out`
    says that error was the hook's own timeout.
    """

    decision: HookDecision
    reason: str = ""
    additional_context: str | None = None
    error: str | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    duration_ms: float = 0.0
