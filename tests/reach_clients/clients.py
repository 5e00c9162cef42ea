"""The real agent clients, installed from the npm registry by `make reach-clients`, run
headless inside the loopback-only namespace against the scripted model endpoint.

Each run gets a scratch HOME (and CODEX_HOME / ~/.gemini), an environment with nothing of
the test process in it but PATH, and flags that keep the client off the network: telemetry,
update checks, plugin syncs and analytics are switched off so that nothing waits on a lookup
that cannot succeed in the namespace.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reach_clients.model_server import ScriptedModel, ToolCall
from tests.reach_clients.netns import LoopbackNamespace

DEFAULT_DIR = Path.home() / ".cache" / "console-tests" / "reach-clients"
CLIENTS_DIR = Path(os.environ.get("REACH_CLIENTS_DIR") or DEFAULT_DIR)
# `make test` sets this: there a missing client is a failure, not a skip.
REQUIRED = os.environ.get("REACH_CLIENTS_REQUIRED", "") == "1"
RUN_TIMEOUT_SECONDS = 120
# console-hook and the interpreter the console's command-hook shims use.
VENV_BIN = str(Path(sys.executable).parent)


def client_binary(name: str) -> Path:
    path = CLIENTS_DIR / "node_modules" / ".bin" / name
    if not path.exists():
        message = f"{name} is not installed in {CLIENTS_DIR}: run `make reach-clients`"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return path


def base_env(home: Path, **extra: str) -> dict[str, str]:
    """A client's whole environment: a scratch HOME, and PATH with the project's console
    scripts (`console-hook`) first. PYTHONPATH passes through, so that console-hook runs the
    code under test when the suite runs from a work tree on PYTHONPATH."""
    path = f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return {**env, **extra}


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return (
            f"exit {self.returncode}\nstdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}"
        )


class Started:
    """A client started in the background (it waits on an approval while the test decides)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def wait(self, timeout: float = RUN_TIMEOUT_SECONDS) -> Run:
        try:
            stdout, stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            stdout, stderr = self.process.communicate()
            raise AssertionError(
                f"the client did not finish in {timeout} s:\n{stdout.decode()}\n{stderr.decode()}"
            ) from None
        return Run(self.process.returncode, stdout.decode(), stderr.decode())


class Client:
    name = ""  # the binary
    runtime = ""  # the console's name for it: /api/v1/hooks/{runtime}, /api/v1/connect/{runtime}
    shell_tool = ""  # the shell tool's name as the client's hooks see it

    def __init__(self, namespace: LoopbackNamespace, model: ScriptedModel, root: Path) -> None:
        self.namespace = namespace
        self.model = model
        self.root = root
        self.home = root / f"{self.name}-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.binary = client_binary(self.name)

    def command(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        raise NotImplementedError

    def shell(self, command: str) -> ToolCall:
        """The model's call of this client's shell tool."""
        raise NotImplementedError

    def install(self, settings: dict[str, Any]) -> None:
        """Put the console's generated hook settings where the client reads them."""
        raise NotImplementedError

    def session_id(self, run: Run) -> str:
        """The session id the client reported for a finished run."""
        raise NotImplementedError

    def start(self, prompt: str, *, cwd: Path, env: dict[str, str] | None = None) -> Started:
        process = self.namespace.popen(
            self.command(prompt),
            cwd=cwd,
            env=self.env(env or {}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return Started(process)

    def run(self, prompt: str, *, cwd: Path, env: dict[str, str] | None = None) -> Run:
        return self.start(prompt, cwd=cwd, env=env).wait()


class ClaudeCode(Client):
    """`claude -p` with `--settings FILE` (the console's generated settings)."""

    name = "claude"
    runtime = "claude-code"
    shell_tool = "Bash"

    def __init__(self, namespace: LoopbackNamespace, model: ScriptedModel, root: Path) -> None:
        super().__init__(namespace, model, root)
        self.settings_path = root / "claude-settings.json"

    def use_settings(self, settings: dict[str, Any]) -> None:
        self.settings_path.write_text(json.dumps(settings, indent=2))

    install = use_settings

    def shell(self, command: str) -> ToolCall:
        return ToolCall("Bash", {"command": command, "description": "scripted step"})

    def session_id(self, run: Run) -> str:
        return str(run.json()["session_id"])

    def command(self, prompt: str) -> list[str]:
        return [
            str(self.binary),
            "-p",
            prompt,
            "--settings",
            str(self.settings_path),
            # The user's own permission rule: Bash runs without asking (headless, an ask is
            # a refusal). The console's hooks still come first: their deny wins.
            "--allowedTools",
            "Bash",
            "--output-format",
            "json",
        ]

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        return base_env(
            self.home,
            ANTHROPIC_BASE_URL=self.model.url,
            ANTHROPIC_API_KEY="sk-ant-scripted",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            **extra,
        )


class Codex(Client):
    """`codex exec` with a custom model provider (Responses API) and `$CODEX_HOME/hooks.json`."""

    name = "codex"
    runtime = "codex"
    shell_tool = "Bash"  # the model calls `exec_command`; hooks see `Bash`

    def __init__(self, namespace: LoopbackNamespace, model: ScriptedModel, root: Path) -> None:
        super().__init__(namespace, model, root)
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(exist_ok=True)

    def use_hooks(self, hooks: dict[str, Any]) -> None:
        (self.codex_home / "hooks.json").write_text(json.dumps(hooks, indent=2))

    install = use_hooks

    def shell(self, command: str) -> ToolCall:
        return ToolCall("exec_command", {"cmd": command})

    def session_id(self, run: Run) -> str:
        found = re.search(r"^session id: (\S+)$", run.stderr, re.MULTILINE)
        assert found, run
        return found.group(1)

    def command(self, prompt: str) -> list[str]:
        provider = (
            f'{{name="scripted", base_url="{self.model.url}/v1", wire_api="responses", '
            "request_max_retries=0, stream_max_retries=0}"
        )
        return [
            str(self.binary),
            "exec",
            "--skip-git-repo-check",
            # hooks.json is trusted on first use in an interactive session; headless, the
            # scratch CODEX_HOME has never seen it.
            "--dangerously-bypass-hook-trust",
            # commands run unsandboxed so that an approved command really acts on the disk.
            "--dangerously-bypass-approvals-and-sandbox",
            "--disable",
            "plugins",
            "--disable",
            "apps",
            "-c",
            "analytics.enabled=false",
            "-c",
            "check_for_update_on_startup=false",
            "-c",
            "model_provider=scripted",
            "-c",
            f"model_providers.scripted={provider}",
            "-c",
            "model=gpt-5",
            prompt,
        ]

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        return base_env(self.home, CODEX_HOME=str(self.codex_home), **extra)


class GeminiCli(Client):
    """`gemini -p` with GOOGLE_GEMINI_BASE_URL and `~/.gemini/settings.json`."""

    name = "gemini"
    runtime = "gemini-cli"
    shell_tool = "run_shell_command"

    def __init__(self, namespace: LoopbackNamespace, model: ScriptedModel, root: Path) -> None:
        super().__init__(namespace, model, root)
        self.settings_path = self.home / ".gemini" / "settings.json"
        self.settings_path.parent.mkdir(exist_ok=True)

    def use_settings(self, settings: dict[str, Any]) -> None:
        quiet = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }
        self.settings_path.write_text(json.dumps({**quiet, **settings}, indent=2))

    install = use_settings

    def shell(self, command: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": command})

    def session_id(self, run: Run) -> str:
        return str(run.json()["session_id"])

    def command(self, prompt: str) -> list[str]:
        return [
            str(self.binary),
            "-p",
            prompt,
            "--yolo",
            "--skip-trust",
            "-m",
            "gemini-2.5-flash",
            "-o",
            "json",
        ]

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        return base_env(
            self.home,
            GEMINI_API_KEY="scripted",
            GOOGLE_GEMINI_BASE_URL=self.model.url,
            GEMINI_CLI_NO_RELAUNCH="true",
            **extra,
        )


CLIENTS: dict[str, type[Client]] = {
    client.runtime: client for client in (ClaudeCode, Codex, GeminiCli)
}
