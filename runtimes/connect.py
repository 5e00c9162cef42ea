"""The ready-to-use hook settings of each runtime for one agent (+ custom agent): what
`GET /api/v1/connect/{runtime}` answers and the "Connect an agent" page shows.

- Claude Code: `http` hooks straight to `POST /api/v1/hooks/claude-code`, the token read
  from `$CONSOLE_TOKEN` (`headers` + `allowedEnvVars`), `onFailure: "block"` so an
  unreachable console blocks; the `managed` form adds `allowManagedHooksOnly` and pins
  `allowedHttpHookUrls` to the console.
- Codex CLI, Gemini CLI, Cursor, GitHub Copilot: command hooks running `console-hook`.

Each hook's timeout is derived from the effective hooks at its event: the runnable hooks'
own timeouts (they run one after another), plus, before a tool, the longest escalation
expiry that can happen there (an approval hook's `expiresIn`, or the default expiry when a
command or prompt hook could answer `ask`), plus a margin. console-hook is told to give up
a few seconds before the runtime would kill it, so it can still fail closed itself.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents.declaration import effective_hooks
from agents.models import Agent, CustomAgent, Hook
from agents.validation import EXPIRES_DEFAULT, TIMEOUT_DEFAULT
from console.errors import InvalidInput, NotFound
from console_client.runtimes import CLAUDE_CODE, CODEX, COPILOT, CURSOR, GEMINI_CLI, RUNTIMES

MARGIN_SECONDS = 10
MINIMUM_SECONDS = 30
# console-hook answers (or fails closed) this long before the runtime's own timeout.
SHIM_HEADROOM_SECONDS = 5
FORMS: dict[str, tuple[str, ...]] = {
    CLAUDE_CODE: ("settings", "managed"),
    CODEX: ("hooks", "config"),
    GEMINI_CLI: ("settings",),
    CURSOR: ("hooks",),
    COPILOT: ("hooks",),
}


@dataclass(frozen=True)
class ConnectFile:
    """One settings file: where it goes, its media type and text, and how to install it."""

    runtime: str
    form: str
    path: str
    content_type: str
    text: str
    install: str

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def event_timeouts(hooks: list[Hook]) -> dict[str, int]:
    """Seconds a runtime should wait for the console at each console event."""
    default_expiry = int(getattr(settings, "CONSOLE_DEFAULT_ESCALATION_SECONDS", EXPIRES_DEFAULT))
    out: dict[str, int] = {}
    for event in ("PreToolUse", "PostToolUse", "Stop"):
        at = [hook for hook in hooks if hook.event == event]
        runnable = [hook for hook in at if hook.hook_type != "approval"]
        total = sum(int(hook.definition.get("timeout", TIMEOUT_DEFAULT)) for hook in runnable)
        if event == "PreToolUse":
            expiries = [
                int(hook.definition.get("expiresIn", default_expiry))
                for hook in at
                if hook.hook_type == "approval"
            ]
            if runnable:
                expiries.append(default_expiry)
            total += max(expiries, default=0)
        out[event] = max(MINIMUM_SECONDS, total + MARGIN_SECONDS)
    return out


def hook_url(base_url: str, runtime: str, custom_agent: CustomAgent | None) -> str:
    url = f"{base_url.rstrip('/')}/api/v1/hooks/{runtime}"
    return f"{url}?custom_agent={custom_agent.name}" if custom_agent is not None else url


def _shim(runtime: str, custom_agent: CustomAgent | None, timeout: int, event: str = "") -> str:
    parts = ["console-hook", runtime]
    if event:
        parts += ["--event", event]
    if custom_agent is not None:
        parts += ["--custom-agent", custom_agent.name]
    parts += ["--timeout", str(max(1, timeout - SHIM_HEADROOM_SECONDS))]
    return shlex.join(parts)


def _exit_guard(command: str, event: str) -> str:
    """Codex and Gemini CLI read only exit 2 as a block, and Gemini CLI reads an exit of 127 at
    AfterAgent as a rejection: when console-hook itself cannot run (not installed, not on
    PATH, a broken interpreter), a pre-tool event must still be blocked (`|| exit 2`) and the
    other events let through (`|| true`), as console-hook does when the console is down."""
    return f"{command} || exit 2" if event == "PreToolUse" else f"{command} || true"


def _claude(
    base_url: str, custom_agent: CustomAgent | None, timeouts: dict[str, int]
) -> dict[str, Any]:
    def handler(event: str) -> dict[str, Any]:
        return {
            "type": "http",
            "url": hook_url(base_url, CLAUDE_CODE, custom_agent),
            "headers": {"Authorization": "Bearer $CONSOLE_TOKEN"},
            "allowedEnvVars": ["CONSOLE_TOKEN"],
            "timeout": timeouts[event],
            "onFailure": "block",
        }

    return {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [handler("PreToolUse")]}],
            "PostToolUse": [{"matcher": "*", "hooks": [handler("PostToolUse")]}],
            "Stop": [{"hooks": [handler("Stop")]}],
        }
    }


def _codex(custom_agent: CustomAgent | None, timeouts: dict[str, int]) -> dict[str, Any]:
    def handler(event: str) -> dict[str, Any]:
        seconds = timeouts[event] + SHIM_HEADROOM_SECONDS
        return {
            "type": "command",
            "command": _exit_guard(_shim(CODEX, custom_agent, seconds), event),
            "timeout": seconds,
        }

    return {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [handler("PreToolUse")]}],
            "PostToolUse": [{"matcher": "*", "hooks": [handler("PostToolUse")]}],
            "Stop": [{"hooks": [handler("Stop")]}],
        }
    }


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string for this text


def _codex_toml(document: dict[str, Any]) -> str:
    lines = ["# Codex CLI: the governance console's hooks (merge into ~/.codex/config.toml)."]
    for event, groups in document["hooks"].items():
        for group in groups:
            lines += ["", f"[[hooks.{event}]]"]
            if "matcher" in group:
                lines.append(f"matcher = {_toml_string(group['matcher'])}")
            for handler in group["hooks"]:
                lines += ["", f"[[hooks.{event}.hooks]]"]
                lines.append(f"type = {_toml_string(handler['type'])}")
                lines.append(f"command = {_toml_string(handler['command'])}")
                lines.append(f"timeout = {handler['timeout']}")
    return "\n".join(lines) + "\n"


def _gemini(custom_agent: CustomAgent | None, timeouts: dict[str, int]) -> dict[str, Any]:
    def handler(event: str) -> dict[str, Any]:
        seconds = timeouts[event] + SHIM_HEADROOM_SECONDS
        return {
            "type": "command",
            "name": "governance-console",
            "command": _exit_guard(_shim(GEMINI_CLI, custom_agent, seconds), event),
            "timeout": seconds * 1000,
            "description": "The governance console evaluates this agent's hooks.",
        }

    return {
        "hooks": {
            "BeforeTool": [{"matcher": ".*", "hooks": [handler("PreToolUse")]}],
            "AfterTool": [{"matcher": ".*", "hooks": [handler("PostToolUse")]}],
            "AfterAgent": [{"hooks": [handler("Stop")]}],
        }
    }


CANNOT_RUN = "console-hook could not run; the governance console blocks this call."


def _deny_unless_it_ran(command: str, deny: dict[str, str], *, exit_code: int) -> str:
    """Cursor and Copilot read a deny from stdout and take a failing command as "allow": when
    console-hook itself cannot run (not installed, not on PATH, a crash), print the deny."""
    printed = f"printf '%s\\n' {shlex.quote(json.dumps(deny))}"
    if exit_code:
        return f"{command} || {{ {printed}; exit {exit_code}; }}"
    return f"{command} || {printed}"


def _cursor(custom_agent: CustomAgent | None, timeouts: dict[str, int]) -> dict[str, Any]:
    deny = {"permission": "deny", "user_message": CANNOT_RUN, "agent_message": CANNOT_RUN}

    def handler(event: str) -> dict[str, Any]:
        seconds = timeouts[event] + SHIM_HEADROOM_SECONDS
        command = _shim(CURSOR, custom_agent, seconds)
        if event == "PreToolUse":
            command = _deny_unless_it_ran(command, deny, exit_code=2)
        return {"command": command, "timeout": seconds}

    pre = [handler("PreToolUse")]
    return {
        "version": 1,
        "hooks": {
            "preToolUse": pre,
            "beforeShellExecution": pre,
            "beforeMCPExecution": pre,
            "beforeReadFile": pre,
            "stop": [handler("Stop")],
        },
    }


def _copilot(custom_agent: CustomAgent | None, timeouts: dict[str, int]) -> dict[str, Any]:
    # Copilot's camelCase input does not name its event: console-hook is told.
    deny = {"permissionDecision": "deny", "permissionDecisionReason": CANNOT_RUN}

    def handler(native: str, event: str) -> dict[str, Any]:
        seconds = timeouts[event] + SHIM_HEADROOM_SECONDS
        command = _shim(COPILOT, custom_agent, seconds, event=native)
        if event == "PreToolUse":
            command = _deny_unless_it_ran(command, deny, exit_code=0)
        return {"type": "command", "bash": command, "timeoutSec": seconds}

    return {
        "version": 1,
        "hooks": {
            "preToolUse": [handler("preToolUse", "PreToolUse")],
            "agentStop": [handler("agentStop", "Stop")],
        },
    }


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2) + "\n"


def connect_file(
    *,
    agent: Agent,
    custom_agent: CustomAgent | None,
    runtime: str,
    base_url: str,
    form: str = "",
) -> ConnectFile:
    """The settings file of `runtime` in `form` (its first form when empty)."""
    if runtime not in RUNTIMES:
        raise NotFound(
            f"Unknown runtime {runtime!r}; use one of {', '.join(RUNTIMES)}.",
            fields={"/runtime": [f"Use one of {', '.join(RUNTIMES)}."]},
        )
    form = form or FORMS[runtime][0]
    if form not in FORMS[runtime]:
        raise InvalidInput(
            f"{runtime} settings come as {', '.join(FORMS[runtime])}.",
            fields={"/form": [f"Use one of {', '.join(FORMS[runtime])}."]},
        )
    timeouts = event_timeouts(effective_hooks(agent, custom_agent))
    install = settings.CONSOLE_HOOK_INSTALL
    if runtime == CLAUDE_CODE:
        document = _claude(base_url, custom_agent, timeouts)
        if form == "managed":
            document = {
                "allowManagedHooksOnly": True,
                "allowedHttpHookUrls": [f"{base_url.rstrip('/')}/api/v1/hooks/*"],
                **document,
            }
            return ConnectFile(
                runtime, form, "/etc/claude-code/managed-settings.json",
                "application/json", _json(document),
                "No install: Claude Code calls the console itself. Set CONSOLE_TOKEN.",
            )  # fmt: skip
        return ConnectFile(
            runtime, form, ".claude/settings.json", "application/json", _json(document),
            "No install: Claude Code calls the console itself. Set CONSOLE_TOKEN.",
        )  # fmt: skip
    if runtime == CODEX:
        document = _codex(custom_agent, timeouts)
        if form == "config":
            return ConnectFile(
                runtime, form, "~/.codex/config.toml", "application/toml",
                _codex_toml(document), install,
            )  # fmt: skip
        return ConnectFile(
            runtime, form, "~/.codex/hooks.json", "application/json", _json(document), install
        )
    if runtime == GEMINI_CLI:
        return ConnectFile(
            runtime, form, ".gemini/settings.json", "application/json",
            _json(_gemini(custom_agent, timeouts)), install,
        )  # fmt: skip
    if runtime == CURSOR:
        return ConnectFile(
            runtime, form, ".cursor/hooks.json", "application/json",
            _json(_cursor(custom_agent, timeouts)), install,
        )  # fmt: skip
    return ConnectFile(
        runtime, form, ".github/hooks/governance-console.json", "application/json",
        _json(_copilot(custom_agent, timeouts)), install,
    )  # fmt: skip
