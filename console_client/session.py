"""One hooks session's state: what `ConsoleHooks.run` (or one runtime event) accumulates,
shared by the interceptors through a context variable. Pure Python: no Django."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from console_client.context_mapping import TurnFacts

MAX_REJECTIONS_DEFAULT = 3
DEFAULT_MAX_TURNS = 40


class Transcript(Protocol):
    """Where the session's conversation is written for hooks to read (execution_summary)."""

    @property
    def path(self) -> Path: ...

    def append(self, role: str, content: str, **extra: Any) -> None: ...


@dataclass
class SessionState:
    """Everything one hooks session (one `ConsoleHooks.run`, or one runtime event) accumulates."""

    session_id: str
    agent_name: str
    transcript: Transcript
    # The most model calls the whole session can make (client.session_max_turns).
    max_turns: int = DEFAULT_MAX_TURNS
    max_prompt_rejections: int = MAX_REJECTIONS_DEFAULT
    # Model calls so far in the session: the Stop continuations (each a new `agent.run`,
    # each emitting `input` again) go on counting; a new `ConsoleHooks.run` starts at 0.
    turn: int = 0
    stop_rejection_count: int = 0
    # Reasons given by Stop hooks at the latest `output` emission, in hook order.
    stop_rejections: list[str] = field(default_factory=list)
    # PostToolUse additionalContext per tool call id (the last hook's wins) ...
    pending_context: dict[str, str] = field(default_factory=dict)
    # ... and once injected, kept so every later request carries it at the same place.
    injected_context: list[tuple[str, str]] = field(default_factory=list)
    tool_names: dict[int, str] = field(default_factory=dict)
    tool_schemas: dict[str, Any] = field(default_factory=dict)
    # The full words of each hook that denied, by binding id (records carry 256 bytes).
    deny_messages: dict[str, str] = field(default_factory=dict)

    def facts(self) -> TurnFacts:
        return TurnFacts(
            agent_name=self.agent_name,
            current_turn=self.turn,
            max_turns=self.max_turns,
            transcript_path=str(self.transcript.path),
            stop_rejection_count=self.stop_rejection_count,
        )


CURRENT_SESSION: ContextVar[SessionState | None] = ContextVar(
    "console_client_session", default=None
)


def current_session() -> SessionState:
    state = CURRENT_SESSION.get()
    if state is None:
        raise RuntimeError(
            "No console hooks session is active: run the agent with `await hooks.run(agent, ...)`."
        )
    return state
