"""`ConsoleHooks`: the console's hooks enforced inside a Microsoft Agent Framework agent.

```python
hooks = ConsoleHooks(base_url, token, custom_agent=None)   # loads the declaration
agent = Agent(client=..., middleware=[hooks.middleware()], tools=[...])
response = await hooks.run(agent, "user message")          # Stop-rejection loop included
await hooks.aclose()                                        # flushes records
```

Each `run` is one AGENT-HOOKS session: an emitter built by the SDK's own loader from the
console's declaration (refreshed by ETag between sessions), `agent_startup` and
`agent_shutdown` emitted here, the per-run points emitted by agent_framework's
`create_agent_hooks_middleware_from_emitter` bundle. The bundle is installed once, so it
is handed stand-ins that forward to the session's emitter and context builder.

Stop semantics: Stop hooks run at `output`; a rejection with a reason is
recorded as a warning and the agent runs again on the same session with the reason as the
user message. Prompt Stop hooks stop rejecting after `maxRejections` (the maximum over
them); command Stop hooks have no limit of their own, but after STOP_REJECTION_CAP
continuations the run ends with the last answer, marked in
`response.additional_properties["console_hooks"]`. evaluate_only agents never continue.

Turns: `current_turn` counts the model calls of the whole session, Stop continuations
included, and `max_turns` is the most the session can make (`session_max_turns`), so
`current_turn <= max_turns` holds at every hook.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
import warnings
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import httpx
from agent_hooks import (
    AgentContextBuilder,
    ApprovalRequest,
    EnforcementMode,
    HostRegistry,
    InterceptionBlocked,
    InterceptionEmitter,
    InterceptionRecord,
)

from console_client.config import DeclarationSource, LoadedDeclaration, default_cache_dir
from console_client.interceptors import (
    CURRENT_SESSION,
    DEFAULT_MAX_TURNS,
    HookRunner,
    SessionState,
    build_registry,
    max_prompt_rejections,
    stop_hook_bindings,
)
from console_client.reasons import reason_hooks
from console_client.records import RecordSink
from console_client.resolver import LONG_POLL_SECONDS, ConsoleResolver
from console_client.results import HookResult
from console_client.tool_seam import HostErrorBlocks, session_posture, with_tool_seam_posture
from console_client.transcript import SessionTranscript

log = logging.getLogger(__name__)

FRAMEWORK = "agent-framework"
STOP_REJECTION_CAP = 25
TRANSCRIPT_TAIL_BYTES = 4096
REFRESH_SECONDS = 30.0
HTTP_TIMEOUT = 10.0


def transcript_tail(path: Path, size: int = TRANSCRIPT_TAIL_BYTES) -> str:
    """The last `size` bytes of the transcript (what reviewers see of the conversation)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


async def _run_command(
    hook: dict[str, Any], context: dict[str, Any], *, transcript_path: str | None = None
) -> HookResult:
    from console_client.runners import arun_command_hook

    return await arun_command_hook(hook, context, transcript_path=transcript_path)


def llm_prompt_runner(llm: Any = None) -> HookRunner:
    """Prompt hooks through `llm`, or the judge configured by CONSOLE_LLM_* (built on first
    use; a missing configuration is a hook error that failMode decides)."""
    judge: list[Any] = [llm]

    async def run(
        hook: dict[str, Any], context: dict[str, Any], *, transcript_path: str | None = None
    ) -> HookResult:
        from console_client.llm import LLMConfigurationError, LLMJudge
        from console_client.runners import arun_prompt_hook

        if judge[0] is None:
            try:
                judge[0] = LLMJudge.from_env()
            except LLMConfigurationError as exc:
                # No judge configured is a hook error like any other: failMode decides.
                if hook.get("failMode") == "block":
                    reason = f"Hook error (failMode block): {exc}"
                    return HookResult(decision="block", reason=reason, error=str(exc))
                return HookResult(decision="allow", error=str(exc))
        return await arun_prompt_hook(hook, context, llm=judge[0], transcript_path=transcript_path)

    return run


def console_registry(
    *,
    resolver: object = None,
    command_runner: HookRunner | None = None,
    prompt_runner: HookRunner | None = None,
    llm: Any = None,
) -> HostRegistry:
    """The registry ConsoleHooks loads declarations with (the SDK's HostRegistry)."""
    return build_registry(
        command_runner=command_runner or _run_command,
        prompt_runner=prompt_runner or llm_prompt_runner(llm),
        resolver=resolver if resolver is not None else _NoResolver(),
    )


class _NoResolver:
    def resolve(self, request: ApprovalRequest) -> Any:
        raise RuntimeError("no console resolver configured")


@dataclass
class _Active:
    emitter: InterceptionEmitter
    builder: AgentContextBuilder
    # Tool-seam host errors the emitter raised, for the posture wrapper (tool_seam.py).
    host_errors: HostErrorBlocks


_ACTIVE: ContextVar[_Active | None] = ContextVar("console_client_active", default=None)


class _SessionEmitter:
    """Forwards the bundle's emissions to the running session's emitter."""

    def __init__(self, owner: ConsoleHooks) -> None:
        self._owner = owner

    async def emit(self, context: dict[str, Any]) -> Any:
        active = self._owner._active()
        try:
            return await active.emitter.emit(context)
        except InterceptionBlocked as blocked:
            active.host_errors.note(blocked)
            raise

    async def emit_unchecked(self, context: dict[str, Any]) -> InterceptionRecord:
        return await self._owner._active().emitter.emit_unchecked(context)


class _SessionBuilder:
    """Forwards the bundle's context construction to the running session's builder."""

    def __init__(self, owner: ConsoleHooks) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner._active().builder, name)


def model_calls_per_run(agent: Any) -> int:
    """The most model calls one `agent.run` makes: agent_framework's function-invocation
    loop makes up to `max_iterations` calls, then one more with tools disabled when the
    budget ran out; without the loop, one call. A client that states nothing gets the
    framework's default budget."""
    config = getattr(getattr(agent, "client", None), "function_invocation_configuration", None)
    if not isinstance(config, dict):
        return DEFAULT_MAX_TURNS + 1
    if config.get("enabled", True) is False:
        return 1
    iterations = config.get("max_iterations")
    return (iterations if isinstance(iterations, int) else DEFAULT_MAX_TURNS) + 1


def stop_continuations(document: dict[str, Any], mode: EnforcementMode) -> int:
    """How many times the Stop-rejection loop can run the agent again in one session."""
    if mode is not EnforcementMode.ENFORCE:
        return 0  # evaluate_only never continues
    commands, prompts = stop_hook_bindings(document)
    if commands:
        return STOP_REJECTION_CAP
    if prompts:
        return min(max_prompt_rejections(document), STOP_REJECTION_CAP)
    return 0


def session_max_turns(agent: Any, document: dict[str, Any], mode: EnforcementMode) -> int:
    """`max_turns` of the hook context: the most model calls one `ConsoleHooks.run` can make
    (every `agent.run` of the session at its budget), the bound of `current_turn`."""
    return model_calls_per_run(agent) * (1 + stop_continuations(document, mode))


def _tool_schemas(agent: Any) -> dict[str, Any]:
    options = getattr(agent, "default_options", None) or {}
    schemas: dict[str, Any] = {}
    for tool in options.get("tools") or []:
        name = getattr(tool, "name", None)
        parameters = getattr(tool, "parameters", None)
        if isinstance(name, str):
            try:
                schemas[name] = parameters() if callable(parameters) else None
            except Exception:  # noqa: BLE001 - a schema is a courtesy for reviewers
                schemas[name] = None
    return schemas


class ConsoleHooks:
    """Console-governed hooks for agent_framework agents. See the module docstring."""

    def __init__(
        self,
        base_url: str,
        token: str,
        custom_agent: str | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        spool_dir: str | os.PathLike[str] | None = None,
        transcript_dir: str | os.PathLike[str] | None = None,
        llm: Any = None,
        command_runner: HookRunner | None = None,
        prompt_runner: HookRunner | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        long_poll_seconds: int = LONG_POLL_SECONDS,
        framework: str = FRAMEWORK,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self.custom_agent = custom_agent
        self._framework = framework
        self._refresh_seconds = refresh_seconds
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._resolver = ConsoleResolver(
            http=lambda: self._async_http(timeout=long_poll_seconds + HTTP_TIMEOUT),
            meta=self._escalation_meta,
            long_poll_seconds=long_poll_seconds,
        )
        self._registry = console_registry(
            resolver=self._resolver,
            command_runner=command_runner,
            prompt_runner=prompt_runner,
            llm=llm,
        )
        self._source = DeclarationSource(
            base_url=self._base_url,
            token=token,
            custom_agent=custom_agent,
            registry=self._registry,
            cache_dir=cache,
            http=lambda: httpx.Client(
                base_url=self._base_url, headers=self._headers, timeout=HTTP_TIMEOUT
            ),
        )
        self._loaded = self._source.load()
        self._loaded_at = time.monotonic()
        agent = self._loaded.agent
        self._sink = RecordSink(
            http=self._async_http,
            spool_dir=Path(spool_dir) if spool_dir is not None else cache / "spool" / agent,
        )
        self._transcript_dir = Path(transcript_dir) if transcript_dir is not None else None
        self._bundle: Any = None
        # The records of the latest session, in order (the console gets them too).
        self.last_records: list[InterceptionRecord] = []

    # ---- configuration ------------------------------------------------------------

    @property
    def declaration(self) -> LoadedDeclaration:
        return self._loaded

    @property
    def agent_name(self) -> str:
        return self.custom_agent or self._loaded.agent

    @property
    def records(self) -> RecordSink:
        return self._sink

    async def refresh(self) -> bool:
        """Ask the console for a newer declaration; True when it changed."""
        before = self._loaded
        self._loaded = await asyncio.to_thread(self._source.refresh, before)
        self._loaded_at = time.monotonic()
        return self._loaded is not before

    def _async_http(self, timeout: float = HTTP_TIMEOUT) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self._base_url, headers=self._headers, timeout=timeout)

    # ---- the middleware and the run -----------------------------------------------

    def middleware(self) -> Any:
        """The agent_framework middleware bundle (install it first, and once): the
        framework's agent-hooks bundle, its tool seam with the declared posture
        (`continue`: a host error refuses the tool call and the run goes on; tool_seam.py)."""
        if self._bundle is None:
            from agent_framework import create_agent_hooks_middleware_from_emitter

            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"\[AGENT_HOOKS\]")
                bundle = create_agent_hooks_middleware_from_emitter(
                    cast(InterceptionEmitter, _SessionEmitter(self)),
                    cast(AgentContextBuilder, _SessionBuilder(self)),
                )
            self._bundle = with_tool_seam_posture(bundle, self._host_errors)
        return self._bundle

    def _host_errors(self) -> HostErrorBlocks | None:
        active = _ACTIVE.get()
        return active.host_errors if active is not None else None

    def _active(self) -> _Active:
        active = _ACTIVE.get()
        if active is None:
            raise RuntimeError(
                "The console hooks middleware ran outside a session: "
                "run the agent with `await hooks.run(agent, message)`."
            )
        return active

    async def run(self, agent: Any, message: Any, *, session: Any = None) -> Any:
        """Run `agent` on `message` as one hooks session, continuing on Stop rejections."""
        if time.monotonic() - self._loaded_at >= self._refresh_seconds:
            await self.refresh()
        loaded = self._loaded
        emitter = self._session_emitter(loaded)
        session_id = uuid.uuid4().hex
        state = SessionState(
            session_id=session_id,
            agent_name=self.agent_name,
            transcript=SessionTranscript.create(session_id, self._transcript_dir),
            max_turns=session_max_turns(agent, loaded.document, emitter.mode),
            max_prompt_rejections=max_prompt_rejections(loaded.document),
            tool_schemas=_tool_schemas(agent),
        )
        builder = AgentContextBuilder(
            agent_id=loaded.agent,
            framework=self._framework,
            session_id=session_id,
            agent_name=self.agent_name,
        )
        kept = reason_hooks(loaded.document)
        emitter.set_record_sink(
            lambda record: self._sink.submit(record, self._meta(record, state), kept)
        )
        active_token = _ACTIVE.set(
            _Active(emitter, builder, HostErrorBlocks(posture=session_posture(emitter)))
        )
        state_token = CURRENT_SESSION.set(state)
        shutdown = "error"
        try:
            await emitter.emit(builder.agent_startup(tools_registered=sorted(state.tool_schemas)))
            agent_session = session if session is not None else agent.create_session()
            response = await self._run_until_stop_allows(
                agent, message, agent_session, state, emitter
            )
            shutdown = "completed"
            return response
        except asyncio.CancelledError:
            shutdown = "cancelled"
            raise
        finally:
            try:
                await emitter.emit_unchecked(builder.agent_shutdown(reason=shutdown))
            finally:
                self.last_records = emitter.results
                CURRENT_SESSION.reset(state_token)
                _ACTIVE.reset(active_token)
                cast(SessionTranscript, state.transcript).remove()

    def _session_emitter(self, loaded: LoadedDeclaration) -> InterceptionEmitter:
        """One session's emitter, built by the SDK's own loader from the declaration."""
        return InterceptionEmitter.from_declaration_value(loaded.document, self._registry)

    async def _run_until_stop_allows(
        self,
        agent: Any,
        message: Any,
        agent_session: Any,
        state: SessionState,
        emitter: InterceptionEmitter,
    ) -> Any:
        state.stop_rejections = []
        response = await agent.run(message, session=agent_session)
        while state.stop_rejections and emitter.mode is EnforcementMode.ENFORCE:
            reasons, state.stop_rejections = state.stop_rejections, []
            if state.stop_rejection_count >= STOP_REJECTION_CAP:
                log.warning(
                    "Stop hooks rejected %d times; ending the run with the last answer",
                    state.stop_rejection_count + 1,
                )
                response.additional_properties["console_hooks"] = {
                    "stop_cap_reached": True,
                    "stop_rejection_count": state.stop_rejection_count + 1,
                    "last_stop_reasons": reasons,
                }
                break
            state.stop_rejection_count += 1
            response = await agent.run("\n".join(reasons), session=agent_session)
        return response

    # ---- meta for records and escalations -----------------------------------------

    def _meta(self, record: InterceptionRecord, state: SessionState) -> dict[str, Any]:
        return {
            "custom_agent": self.custom_agent,
            "tool_name": state.tool_names.get(record.sequence),
            "framework": self._framework,
            "revision": self._loaded.revision,
        }

    def _escalation_meta(self, request: ApprovalRequest) -> dict[str, Any]:
        state = CURRENT_SESSION.get()
        tool_call = request.context.get("tool_call") or {}
        tool_name = tool_call.get("name")
        approval = request.verdict.approval or {}
        session = request.context.get("session") or {}
        return {
            "custom_agent": self.custom_agent,
            "hook": approval.get("hook"),
            "tool_name": tool_name,
            "session_id": session.get("id"),
            "turn": state.turn if state is not None else None,
            "transcript": transcript_tail(state.transcript.path) if state is not None else "",
            "tool_schema": state.tool_schemas.get(str(tool_name)) if state is not None else None,
            "framework": self._framework,
            "revision": self._loaded.revision,
        }

    # ---- lifecycle -------------------------------------------------------------------

    async def aclose(self) -> None:
        """Deliver (or spool) every record still queued."""
        await self._sink.aclose()

    async def __aenter__(self) -> ConsoleHooks:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
