"""Running one hook on one context: command hooks in the sandbox, prompt hooks
through the LLM judge. The same runners serve the agent middleware (async variants), the
console's "Test this hook" action and the tests (blocking variants).

Result rules, for both kinds:
- command: exit 0 and no stdout → allow; exit 0 with JSON → the parsed answer; exit 2 →
  block with stderr as the reason; any other exit, a timeout, output that is not hook JSON,
  stdout over its cap or a sandbox that cannot be built → a hook error;
- prompt: the judge's final message parsed the same way; HTTP errors, timeouts and
  garbage → a hook error;
- a hook error is decided by `failMode`: `allow` → allow with `error` set, `block` → block
  with a reason naming the error;
- at Stop, a rejection without a reason counts as an approval.

These functions never raise for anything about the hook itself: every problem comes back as
a HookResult.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from console_client.hook_output import HookOutput, HookOutputError, parse_hook_output
from console_client.llm import LLMError, LLMJudge
from console_client.results import HookDecision, HookResult
from console_client.sandbox import (
    SHEBANGS,
    HookProgram,
    SandboxConfig,
    SandboxError,
    prepared_invocation,
    unsandboxed_requested,
)
from console_client.sandbox_run import Execution, execute
from console_client.transcript import TranscriptTools

EXCERPT_MAX_BYTES = 8 * 1024
REASON_MAX_CHARS = 8 * 1024
TIMEOUT_DEFAULT = 30
MODEL_DEFAULT = "ReasoningFast"
JUDGE_SYSTEM_PROMPT = """\
You are a policy hook of an AI agent governance console. Evaluate the hook context you are \
given by following the user's instructions exactly.
The conversation transcript is a JSON Lines file at the path in `execution_summary`; you \
may read it with the ReadFile and GrepSearch tools (they read that file only).
Answer with exactly one JSON object and nothing else:
{"ok": true} to allow, or {"ok": false, "reason": "<why, addressed to the agent>"} to reject."""


class _HookDefinitionError(ValueError):
    pass


def _blocking[T](factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code, inside a running loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="console-hook") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _excerpt(data: bytes, limit: int = EXCERPT_MAX_BYTES) -> str:
    text = data[:limit].decode("utf-8", errors="replace")
    return text + "\n[... truncated]" if len(data) > limit else text


def _fail_mode(hook: Mapping[str, Any]) -> str:
    # Anything but an explicit "allow" fails closed.
    value = hook.get("failMode", "allow")
    return "allow" if value == "allow" else "block"


def _timeout(hook: Mapping[str, Any]) -> float:
    value = hook.get("timeout", TIMEOUT_DEFAULT)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _HookDefinitionError(f"timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def _event(context: Mapping[str, Any]) -> str | None:
    event = context.get("hook_event_name")
    return event if isinstance(event, str) else None


def _hook_error(message: str, *, fail_mode: str, started: float, **fields: Any) -> HookResult:
    duration = (time.perf_counter() - started) * 1000
    if fail_mode == "allow":
        return HookResult(decision="allow", error=message, duration_ms=duration, **fields)
    reason = f"Hook error (failMode block): {message}"
    return HookResult(
        decision="block", reason=reason, error=message, duration_ms=duration, **fields
    )


def _decided(output: HookOutput, *, event: str | None, started: float, **fields: Any) -> HookResult:
    decision: HookDecision = output.decision
    reason = output.reason[:REASON_MAX_CHARS]
    if decision == "block" and not reason:
        if event == "Stop":
            # A Stop rejection without a reason counts as an approval.
            decision = "allow"
        else:
            reason = "The hook blocked this without giving a reason."
    return HookResult(
        decision=decision,
        reason=reason,
        additional_context=output.additional_context,
        duration_ms=(time.perf_counter() - started) * 1000,
        **fields,
    )


def _program(hook: Mapping[str, Any]) -> HookProgram:
    if hook.get("type", "command") != "command":
        raise _HookDefinitionError(f"not a command hook (type {hook.get('type')!r})")
    command, script = hook.get("command"), hook.get("script")
    if command is not None and script is not None:
        raise _HookDefinitionError("command and script are mutually exclusive")
    if isinstance(script, str) and script.strip():
        first_line = script.split("\n", 1)[0].rstrip("\r").rstrip()
        if first_line not in SHEBANGS:
            raise _HookDefinitionError(
                f"script must start with {SHEBANGS[0]!r} or {SHEBANGS[1]!r}, got {first_line!r}"
            )
        return HookProgram("script", script)
    if isinstance(command, str) and command.strip():
        return HookProgram("command", command)
    raise _HookDefinitionError("a command hook needs a non-empty command or script")


def _exit_description(code: int) -> str:
    if code < 0:
        return f"was killed by {_signal_name(-code)}"
    if 128 < code < 128 + 65:
        return f"exited with code {code} ({_signal_name(code - 128)}?)"
    return f"exited with code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _interpret(
    run: Execution,
    *,
    event: str | None,
    fail_mode: str,
    timeout: float,
    stdout_max: int,
    started: float,
) -> HookResult:
    fields: dict[str, Any] = {
        "stdout": _excerpt(run.stdout),
        "stderr": _excerpt(run.stderr),
        "exit_code": run.exit_code,
    }

    def error(message: str) -> HookResult:
        return _hook_error(message, fail_mode=fail_mode, started=started, **fields)

    stderr_text = run.stderr.decode("utf-8", errors="replace").strip()
    if run.spawn_error is not None:
        return error(f"the hook process could not be started: {run.spawn_error}")
    if run.stdout_overflow:
        return error(f"stdout exceeded {stdout_max} bytes; the hook was killed")
    if run.timed_out:
        fields["timed_out"] = True
        return error(f"timed out after {timeout:g} s; its process group was killed")
    code = run.exit_code
    assert code is not None
    if code == 1 and stderr_text.startswith(("bwrap: ", "prlimit: ", "unshare: ")):
        return error(f"the sandbox could not be built: {stderr_text.splitlines()[0]}")
    if code == 0:
        if not run.stdout.strip():
            return HookResult(
                decision="allow", duration_ms=(time.perf_counter() - started) * 1000, **fields
            )
        try:
            output = parse_hook_output(run.stdout.decode("utf-8", errors="replace"), event=event)
        except HookOutputError as exc:
            return error(f"stdout is not a valid hook answer: {exc}")
        return _decided(output, event=event, started=started, **fields)
    if code == 2:
        return _decided(HookOutput("block", stderr_text), event=event, started=started, **fields)
    detail = f": {stderr_text.splitlines()[-1][:300]}" if stderr_text else ""
    return error(f"the hook {_exit_description(code)}{detail}")


async def arun_command_hook(
    hook: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    transcript_path: str | None = None,
    sandbox: SandboxConfig | None = None,
) -> HookResult:
    """Run one command hook on one context in the sandbox, without blocking the loop."""
    started = time.perf_counter()
    fail_mode = _fail_mode(hook)
    try:
        timeout = _timeout(hook)
        program = _program(hook)
    except _HookDefinitionError as exc:
        return _hook_error(f"invalid hook: {exc}", fail_mode=fail_mode, started=started)
    config = sandbox or SandboxConfig()
    try:
        with prepared_invocation(
            program,
            context,
            transcript_path=transcript_path,
            config=config,
            timeout=timeout,
            unsandboxed=unsandboxed_requested(),
        ) as invocation:
            run = await execute(
                invocation,
                wall_clock_s=timeout,
                stdout_max=config.stdout_max_bytes,
                stderr_max=config.stderr_max_bytes,
            )
    except SandboxError as exc:
        return _hook_error(
            f"the sandbox could not be built: {exc}", fail_mode=fail_mode, started=started
        )
    return _interpret(
        run,
        event=_event(context),
        fail_mode=fail_mode,
        timeout=timeout,
        stdout_max=config.stdout_max_bytes,
        started=started,
    )


def run_command_hook(
    hook: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    transcript_path: str | None = None,
    sandbox: SandboxConfig | None = None,
) -> HookResult:
    """Blocking variant of `arun_command_hook`."""
    return _blocking(
        lambda: arun_command_hook(hook, context, transcript_path=transcript_path, sandbox=sandbox)
    )


def build_prompt(template: str, context: Mapping[str, Any]) -> str:
    """`$ARGUMENTS` replaced by the context JSON, or the JSON appended when it is absent."""
    arguments = json.dumps(context, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    if "$ARGUMENTS" in template:
        return template.replace("$ARGUMENTS", arguments)
    return f"{template.rstrip()}\n\n{arguments}"


async def arun_prompt_hook(
    hook: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    llm: LLMJudge,
    transcript_path: str | None = None,
) -> HookResult:
    """Run one prompt hook on one context through the LLM judge, without blocking the loop."""
    started = time.perf_counter()
    fail_mode = _fail_mode(hook)
    event = _event(context)
    try:
        timeout = _timeout(hook)
        template = hook.get("prompt")
        if hook.get("type", "prompt") != "prompt":
            raise _HookDefinitionError(f"not a prompt hook (type {hook.get('type')!r})")
        if not isinstance(template, str) or not template.strip():
            raise _HookDefinitionError("a prompt hook needs a non-empty prompt")
    except _HookDefinitionError as exc:
        return _hook_error(f"invalid hook: {exc}", fail_mode=fail_mode, started=started)
    model_name = hook.get("model") or MODEL_DEFAULT
    model = llm.model_for(str(model_name))
    summary = context.get("execution_summary")
    tools = TranscriptTools(transcript_path or (summary if isinstance(summary, str) else None))
    try:
        async with asyncio.timeout(timeout):
            answer = await llm.ajudge(
                system=JUDGE_SYSTEM_PROMPT,
                prompt=build_prompt(template, context),
                model=model,
                tools=tools,
            )
    except TimeoutError:
        return _hook_error(
            f"the judge did not answer within {timeout:g} s",
            fail_mode=fail_mode,
            started=started,
            timed_out=True,
        )
    except LLMError as exc:
        return _hook_error(f"the judge failed: {exc}", fail_mode=fail_mode, started=started)
    fields = {"stdout": _excerpt(answer.encode("utf-8"))}
    try:
        output = parse_hook_output(answer, event=event)
    except HookOutputError as exc:
        return _hook_error(
            f"the judge's answer is not a valid hook answer: {exc}",
            fail_mode=fail_mode,
            started=started,
            **fields,
        )
    return _decided(output, event=event, started=started, **fields)


def run_prompt_hook(
    hook: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    llm: LLMJudge,
    transcript_path: str | None = None,
) -> HookResult:
    """Blocking variant of `arun_prompt_hook`."""
    return _blocking(
        lambda: arun_prompt_hook(hook, context, llm=llm, transcript_path=transcript_path)
    )
