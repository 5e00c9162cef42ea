"""A demo SRE agent governed by the console: copy this file to start your own.

It is a real Microsoft Agent Framework agent with three tools (a simulated `Bash`,
`restart_service` and `read_logs`); the model is scripted (no LLM, no network besides the
console), so it runs anywhere. Everything the admin configures in the console applies to
it: PostToolUse hooks audit or block tool results, Stop hooks make it continue, PreToolUse
approval hooks wait for a reviewer, and every interception record lands in the audit log.

    CONSOLE_URL=http://127.0.0.1:8000 CONSOLE_TOKEN=agt_... python examples/demo_agent.py

Optional: CONSOLE_CUSTOM_AGENT (e.g. my_hooked_agent), DEMO_PACE (seconds between
tasks, default 3), DEMO_RUNS (tasks per loop, 0 = forever).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Message, tool
from agent_hooks import InterceptionBlocked

from console_client import ConsoleConfigError, ConsoleHooks
from console_client.scripted import ScriptedChatClient, message_texts, say, tool_call

log = logging.getLogger("demo_agent")

COMPLETION = "Task complete."

# What the simulated shell answers.
SHELL = {
    "df -h": "Filesystem  Size  Used Avail Use% Mounted on\n/dev/sda1   100G   61G   39G  61% /",
    "uptime": " 10:02:11 up 41 days,  3:12,  0 users,  load average: 0.42, 0.37, 0.31",
    "systemctl status api": "api.service - API\n   Active: active (running) since Mon 09:12",
    "rm -rf /var/cache/app/*": "",
    "sudo journalctl --vacuum-time=2d": "Vacuuming done, freed 1.2G of archived journals.",
}


@tool(name="Bash", description="Run a shell command on the host (simulated in this demo).")
def bash(command: str) -> str:
    return SHELL.get(command, f"bash: {command.split()[0]}: done")


@tool(name="restart_service", description="Restart a systemd service (simulated).")
def restart_service(service: str) -> str:
    return f"{service}.service restarted"


@tool(name="read_logs", description="Read the last lines of a service's log (simulated).")
def read_logs(service: str, lines: int = 20) -> str:
    return f"[{service}] 502 upstream timed out (x{random.randint(3, 40)})"  # noqa: S311


# (user task, model steps); a step is a tool call (name, args) or the final answer text.
Step = tuple[str, dict[str, Any]] | str
OPS_TASKS: list[tuple[str, list[Step]]] = [
    ("How much disk is left on web-1?", [("Bash", {"command": "df -h"}), "39G free (61% used)."]),
    ("Is the host healthy?", [("Bash", {"command": "uptime"}), f"Load is low. {COMPLETION}"]),
    (
        "Free some disk space.",
        [("Bash", {"command": "rm -rf /var/cache/app/*"}), "Cleared the app cache."],
    ),
    (
        "Trim the journal.",
        [("Bash", {"command": "sudo journalctl --vacuum-time=2d"}), f"Freed 1.2G. {COMPLETION}"],
    ),
]
CHANGE_TASKS: list[tuple[str, list[Step]]] = [
    (
        "The api returns 502s, fix it.",
        [
            ("read_logs", {"service": "api"}),
            ("restart_service", {"service": "api"}),
            ("Bash", {"command": "systemctl status api"}),
            f"Restarted api; it is running again. {COMPLETION}",
        ],
    ),
]


class DemoModel:
    """Plays one task's steps; answers a Stop hook's request by complying with it."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.calls = 0
        self.last_answer = "Done."

    def __call__(self, messages: list[Message]) -> Message:
        self.calls += 1
        user = message_texts(messages[-1:], role="user")
        if user and COMPLETION in user[0] and self.calls > 1:
            # A Stop hook asked for the completion marker.
            return say(f"{self.last_answer} {COMPLETION}")
        if self.steps:
            step = self.steps.pop(0)
            if isinstance(step, tuple):
                name, arguments = step
                return tool_call(name, arguments, f"call-{self.calls}")
            self.last_answer = step
            return say(step)
        return say(self.last_answer)


async def run_task(hooks: ConsoleHooks, task: str, steps: Sequence[Step]) -> str:
    model = DemoModel(steps)
    agent = Agent(
        client=ScriptedChatClient(responder=model),
        name="sre-demo",
        instructions="You are an SRE assistant.",
        tools=[bash, restart_service, read_logs],
        middleware=[hooks.middleware()],
    )
    try:
        response = await hooks.run(agent, task)
    except InterceptionBlocked as blocked:
        return f"blocked: {blocked.result.verdict.reason}"
    return str(response.text)


async def connect(url: str, token: str, custom_agent: str | None) -> ConsoleHooks:
    """Wait for the console (it may still be starting); never run without configuration."""
    delay = 1.0
    while True:
        try:
            return ConsoleHooks(url, token, custom_agent)
        except ConsoleConfigError as exc:
            log.warning("waiting for the console: %s", exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


async def task_loop(
    hooks: ConsoleHooks, tasks: list[tuple[str, list[Step]]], pace: float, runs: int
) -> None:
    done = 0
    while runs == 0 or done < runs:
        task, steps = tasks[done % len(tasks)]
        try:
            answer = await run_task(hooks, task, steps)
            log.info("%s -> %s", task, answer)
        except Exception:  # noqa: BLE001 - a demo keeps going; the console records the failure
            log.exception("task failed: %s", task)
        done += 1
        await asyncio.sleep(pace)


async def demo(
    url: str, token: str, *, custom_agent: str | None = None, pace: float = 3.0, runs: int = 0
) -> None:
    hooks = await connect(url, token, custom_agent)
    async with hooks:
        # Two loops, so a change waiting for a reviewer never stops the routine traffic.
        await asyncio.gather(
            task_loop(hooks, OPS_TASKS, pace, runs),
            task_loop(hooks, CHANGE_TASKS, pace * 3, max(runs // 3, 1) if runs else 0),
        )


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("agent_framework").setLevel(logging.WARNING)
    url = os.environ.get("CONSOLE_URL", "http://127.0.0.1:8000")
    token = os.environ.get("CONSOLE_TOKEN", "")
    if not token:
        raise SystemExit("Set CONSOLE_TOKEN to an agent token (manage.py bootstrap_agent <slug>).")
    asyncio.run(
        demo(
            url,
            token,
            custom_agent=os.environ.get("CONSOLE_CUSTOM_AGENT") or None,
            pace=float(os.environ.get("DEMO_PACE", "3")),
            runs=int(os.environ.get("DEMO_RUNS", "0")),
        )
    )


if __name__ == "__main__":
    main()
