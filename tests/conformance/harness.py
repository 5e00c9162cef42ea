"""console_client as the host of the SDK's conformance kit (`agent_hooks.ctk`, spec §13).

`ConsoleClientHarness` implements the kit's `Harness` protocol with console_client's real
host: one `ConsoleHooks` that loaded the declaration a live console serves (`GET
/api/v1/declaration`), a real `agent_framework.Agent` per vector with the ConsoleHooks
middleware bundle, a scripted model (`ScriptedChatClient`, finish reasons included) and one
`FunctionTool` per scenario tool. Every vector is one `ConsoleHooks.run` session: its
`agent_startup`/`agent_shutdown`, its Stop loop, its record sink (the records go to the live
console) and the middleware's seams are console_client's and agent_framework's own.

What the harness supplies, as the kit's own reference harness does with its document:

- `declaration()` is the served document, so the capabilities and the
  `tool_seam_host_error` posture a vector is assessed against are the ones the console
  declares, resolved against console_client's code surface (`HOST_SURFACE`).
- A field-based vector (`setup`) runs the served document with the vector's mode,
  composition, identity provider and approval seam written into `configuration`, and its
  bindings replaced by the vector's scripted interceptors (kind `conformance.scripted`, in
  a registry made by console_client's `console_registry`, beside the console kinds). The
  console's `console-base` and hook bindings are not kept: each would be one more
  interceptor in every fold the vector pins (see docs/conformance.md).
- A declaration vector (`setup_declared`) runs the vector's document with the kit's
  registry, through the same loader (`InterceptionEmitter.from_declaration_value`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from agent_framework import (
    SKIP_PARSING,
    Agent,
    ChatResponse,
    Content,
    FunctionTool,
    Message,
)
from agent_hooks import (
    AgentContext,
    BindingContext,
    EnforcementMode,
    HostRegistry,
    HostSurface,
    InterceptionBlocked,
    InterceptionEmitter,
    Interceptor,
)
from agent_hooks.approval import ApprovalResolver
from agent_hooks.composition import CompositionConfig
from agent_hooks.ctk import Capability, RunOutcome, RunRecord, Scenario, redact_paths
from agent_hooks.ctk.harness import ToolSpec

from console_client import ConsoleHooks
from console_client.client import console_registry
from console_client.config import LoadedDeclaration
from console_client.interceptors import HOST_SURFACE
from console_client.scripted import ScriptedChatClient

SCRIPTED_KIND = "conformance.scripted"
SCRIPTED_RESOLVER = "conformance"
SCRIPTED_REDACTOR = "conformance-redact"
# The name the kit's vectors give a custom identity provider that raises (§10.1).
FAULT_PROVIDER = "ctk-fault"


class VectorHooks(ConsoleHooks):
    """ConsoleHooks whose next session runs the emitter the harness built for one vector.

    Everything else is ConsoleHooks' own: the declaration it loaded from the console, the
    sessions, the middleware bundle, the Stop loop, the record sink. One instance runs every
    vector of a module, one session each, as a long-lived agent process would.
    """

    vector_emitter: InterceptionEmitter | None = None
    emitted = 0

    def _session_emitter(self, loaded: LoadedDeclaration) -> InterceptionEmitter:
        emitter, self.vector_emitter = self.vector_emitter, None
        if emitter is None:
            raise RuntimeError("the conformance harness built no emitter for this session")
        return emitter


def _raising_provider(_context: AgentContext) -> str:
    raise RuntimeError("ctk scripted provider fault")


def _model_step(response: Any) -> ChatResponse[Any]:
    contents: list[Content] = []
    if response.content is not None:
        contents.append(Content.from_text(str(response.content)))
    for call in response.tool_calls:
        contents.append(
            Content.from_function_call(call["id"], call["name"], arguments=dict(call["args"]))
        )
    return ChatResponse(
        messages=[Message("assistant", contents)], finish_reason=response.finish_reason
    )


def _tool(spec: ToolSpec, log: list[dict[str, Any]]) -> FunctionTool:
    def invoke(**args: Any) -> Any:
        value, is_error = spec.invoke(args)
        log.append({"name": spec.name, "args": dict(args)})
        if is_error:
            raise RuntimeError(str(value))
        return value

    properties = {
        name: ({"type": kind} if isinstance(kind, str) else kind)
        for name, kind in (spec.schema or {}).items()
    }
    return FunctionTool(
        name=spec.name,
        description=f"scripted tool {spec.name}",
        func=invoke,
        input_model={"type": "object", "properties": properties, "additionalProperties": True},
        # The tool's value reaches post_tool_call as the tool returned it (not as JSON text).
        result_parser=SKIP_PARSING,
    )


class ConsoleClientHarness:
    """The kit's `Harness` with console_client's host (see the module docstring)."""

    name = "console-client"

    def __init__(self, hooks: VectorHooks) -> None:
        self._hooks = hooks
        known = {c.value for c in Capability}
        self.capabilities = {Capability(c) for c in HOST_SURFACE.capabilities if c in known}
        # The runner reads both from declaration() resolved against host_surface(); these
        # attributes say the same for a reader of the protocol.
        posture = hooks.declaration.document["configuration"]["posture"]
        self.tool_seam_host_error = str(posture["tool_seam_host_error"])
        self._scenario: Scenario | None = None
        self._tool_log: list[dict[str, Any]] = []

    # ---- what the host declares ---------------------------------------------------

    def host_surface(self) -> HostSurface:
        return HOST_SURFACE

    def declaration(self) -> dict[str, Any]:
        """The document the console served to console_client (`GET /api/v1/declaration`)."""
        return copy.deepcopy(self._hooks.declaration.document)

    # ---- wiring one vector --------------------------------------------------------

    def setup(
        self,
        scenario: Scenario,
        interceptors: list[Interceptor],
        resolver: ApprovalResolver | None,
        mode: EnforcementMode,
        composition: CompositionConfig,
        identity_provider: str | None,
        redact_for_approval: list[str] | None = None,
    ) -> None:
        # console_client's own registry (the console kinds), plus the vector's seams.
        registry = console_registry()
        document = self.declaration()
        configuration = document["configuration"]
        configuration["mode"] = mode.value
        configuration["composition"] = composition.to_wire()
        if identity_provider == FAULT_PROVIDER:
            registry.identity_provider(FAULT_PROVIDER, _raising_provider)
        configuration["identity_provider"] = identity_provider
        if resolver is not None:
            registry.approval_resolver(SCRIPTED_RESOLVER, resolver)
        paths = list(redact_for_approval or [])
        if paths:
            registry.approval_redactor(SCRIPTED_REDACTOR, lambda ctx: redact_paths(ctx, paths))
        configuration["approval"] = {
            "resolver": SCRIPTED_RESOLVER if resolver is not None else None,
            "redactor": SCRIPTED_REDACTOR if paths else None,
        }
        registry.kind(SCRIPTED_KIND, _by_index(list(interceptors)))
        document["bindings"] = [
            {"id": f"interceptor-{i}", "kind": SCRIPTED_KIND, "config": {"index": i}}
            for i in range(len(interceptors))
        ]
        self._start(scenario, InterceptionEmitter.from_declaration_value(document, registry))

    def setup_declared(
        self, scenario: Scenario, document: dict[str, Any], registry: HostRegistry
    ) -> None:
        # A refusal propagates: the runner records it as the load outcome (§7.7.9).
        self._start(scenario, InterceptionEmitter.from_declaration_value(document, registry))

    def _start(self, scenario: Scenario, emitter: InterceptionEmitter) -> None:
        self._scenario = scenario
        self._hooks.vector_emitter = emitter
        self._tool_log = []

    # ---- the run ------------------------------------------------------------------

    async def run(self) -> RunRecord:
        assert self._scenario is not None
        scenario, hooks = self._scenario, self._hooks
        agent = Agent(
            client=ScriptedChatClient([_model_step(step) for step in scenario.model_script]),
            name="ctk-agent",
            tools=[_tool(spec, self._tool_log) for spec in scenario.tools.values()],
            middleware=[hooks.middleware()],
        )
        outcome, final, error = RunOutcome.COMPLETED, None, None
        hooks.last_records = []
        try:
            response = await hooks.run(agent, scenario.input["content"])
            final = response.text
        except InterceptionBlocked as exc:
            outcome, error = RunOutcome.BLOCKED, str(exc)
        except Exception as exc:  # noqa: BLE001 - the kit asserts the outcome, not the type
            outcome, error = RunOutcome.ERROR, f"{type(exc).__name__}: {exc}"
        results = hooks.last_records
        hooks.emitted += len(results)
        return RunRecord(
            outcome=outcome,
            final_output=final,
            tool_invocations=list(self._tool_log),
            error=error,
            identities=[(r.input_identity, r.enforced_identity) for r in results],
            records=[r.to_wire() for r in results],
        )

    def teardown(self) -> None:
        self._scenario = None
        self._hooks.vector_emitter = None


def _by_index(slots: list[Interceptor]) -> Callable[[Any, BindingContext], Interceptor]:
    def resolve(config: Any, binding: BindingContext) -> Interceptor:
        index = config.get("index") if isinstance(config, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(slots):
            raise ValueError(f"no scripted interceptor for binding {binding.id}")
        return slots[index]

    return resolve
