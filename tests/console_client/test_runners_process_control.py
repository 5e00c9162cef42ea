"""Process control of command hooks: whole-group kill on timeout, output caps, reaping,
and the async variant that does not block the event loop."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from console_client import arun_command_hook, run_command_hook
from console_client.runners import EXCERPT_MAX_BYTES
from console_client.sandbox import UNSANDBOXED_ENV, SandboxConfig

CONTEXT: dict[str, Any] = {"hook_event_name": "PostToolUse", "tool_name": "Bash"}


@pytest.fixture(params=["sandboxed", "unsandboxed"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "unsandboxed":
        monkeypatch.setenv(UNSANDBOXED_ENV, "1")
    else:
        monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)
    return str(request.param)


def unique_sleep() -> str:
    """A sleep duration no other process on the machine has in its command line."""
    return f"{400 + uuid.uuid4().int % 500}.{uuid.uuid4().int % 10**6:06d}"


def processes_running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def wait_until_gone(marker: str, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := processes_running(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_timeout_kills_the_whole_process_group(mode: str) -> None:
    marker = unique_sleep()
    # A detached grandchild ((...&) re-parents it) and a background child, then a foreground wait.
    source = f"(sleep {marker} &); sleep {marker} & sleep {marker}"
    started = time.monotonic()
    result = run_command_hook({"type": "command", "command": source, "timeout": 1}, CONTEXT)
    assert time.monotonic() - started < 15  # the sleeps run 400-900 s
    assert result.error is not None and "timed out" in result.error
    assert wait_until_gone(marker) == []


def test_background_children_do_not_outlive_a_finished_hook(mode: str) -> None:
    marker = unique_sleep()
    source = f"sleep {marker} >/dev/null 2>&1 & sleep {marker} & exit 0"
    started = time.monotonic()
    result = run_command_hook({"type": "command", "command": source, "timeout": 20}, CONTEXT)
    assert time.monotonic() - started < 15  # the sleeps run 400-900 s
    assert (result.decision, result.error) == ("allow", None)
    assert wait_until_gone(marker) == []


def children_of_this_process() -> dict[str, str]:
    """pid → state of every direct child of the test process."""
    me = str(os.getpid())
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                children[entry.name] = fields[0]
    return children


def test_no_zombie_children_are_left_behind(mode: str) -> None:
    # Other fixtures of the session (a live console server) may have children of their own.
    before = children_of_this_process()
    for source in ("exit 0", "sleep 30", "sleep 0.1 & sleep 0.1 & exit 1", "yes"):
        run_command_hook({"type": "command", "command": source, "timeout": 1}, CONTEXT)
    after = children_of_this_process()
    assert set(after) - set(before) == set()
    assert "Z" not in after.values()


def test_stdout_flood_is_capped_and_killed(mode: str) -> None:
    started = time.monotonic()
    result = run_command_hook(
        {"type": "command", "command": "yes", "timeout": 20, "failMode": "block"}, CONTEXT
    )
    assert time.monotonic() - started < 10  # killed at the cap, not at the timeout
    assert result.decision == "block"
    assert result.error is not None and "stdout exceeded 1048576 bytes" in result.error
    assert len(result.stdout) <= EXCERPT_MAX_BYTES + 20


def test_stderr_flood_is_truncated_but_the_answer_stands() -> None:
    source = "head -c 3000000 /dev/zero | tr '\\0' e >&2; echo '{\"ok\": true}'"
    result = run_command_hook({"type": "command", "command": source, "timeout": 20}, CONTEXT)
    assert (result.decision, result.error) == ("allow", None)
    assert len(result.stderr) <= EXCERPT_MAX_BYTES + 20
    assert result.stderr.endswith("[... truncated]")


def test_stdout_cap_is_configurable() -> None:
    result = run_command_hook(
        {"type": "command", "command": "head -c 5000 /dev/zero", "timeout": 5},
        CONTEXT,
        sandbox=SandboxConfig(stdout_max_bytes=1000),
    )
    assert result.error is not None and "stdout exceeded 1000 bytes" in result.error


async def test_async_variant_does_not_block_the_loop() -> None:
    hook = {"type": "command", "command": "sleep 2", "timeout": 10}
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    started = time.monotonic()
    results = await asyncio.gather(*(arun_command_hook(hook, CONTEXT) for _ in range(3)))
    elapsed = time.monotonic() - started
    tick_task.cancel()
    assert [result.decision for result in results] == ["allow"] * 3
    assert elapsed < 5  # three 2 s hooks ran concurrently (6 s one after another)
    assert ticks >= 10  # the loop kept running while they did


async def test_cancelling_the_async_variant_kills_the_hook() -> None:
    marker = unique_sleep()
    hook = {"type": "command", "command": f"sleep {marker}", "timeout": 60}
    task = asyncio.create_task(arun_command_hook(hook, CONTEXT))
    for _ in range(100):
        if processes_running(marker):
            break
        await asyncio.sleep(0.05)
    assert processes_running(marker), "the hook never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(marker) == []


async def test_blocking_variant_works_inside_a_running_loop() -> None:
    result = run_command_hook({"type": "command", "command": "exit 2", "timeout": 5}, CONTEXT)
    assert result.decision == "block"
