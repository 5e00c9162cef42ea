"""Benchmark (b) of issue 3: one sandboxed command hook vs the same script run unsandboxed.

The hook is the seed's dangerous-command PostToolUse script (python3), unchanged:

- sandboxed: `console_client.run_command_hook` (prlimit + bubblewrap, the whole runner:
  context on stdin, capped capture, answer parsing) — and `arun_command_hook` awaited in one
  long-lived event loop, which is how the agent middleware calls it;
- plain: `subprocess.run([script], input=context)` with the same script file, no sandbox,
  and the same PATH as inside the sandbox (so both start the same python3).

Runs are interleaved (N each, default 200) after a warm-up. A second pair isolates the
sandbox set-up itself: `bash -c 'exit 0'` through the runner's prlimit+bwrap command line
vs the same bash started directly. Target: sandboxed p50/p95 ≤ 1.5× plain.

    .venv/bin/python bench/hook_overhead_sandbox.py [N]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

from console_client import arun_command_hook, run_command_hook  # noqa: E402
from console_client.sandbox import (  # noqa: E402
    HookProgram,
    SandboxConfig,
    prepared_invocation,
    unsandboxed_requested,
)
from demo.documents import SEED_CUSTOM_AGENT_YAML  # noqa: E402

WARMUP = 10
CONTEXT = {
    "hook_event_name": "PostToolUse",
    "agent_name": "sre-agent",
    "current_turn": 3,
    "max_turns": 40,
    "execution_summary": "/nonexistent/transcript.jsonl",
    "tool_name": "Bash",
    "tool_input": {"command": "ls -la /var/log"},
    "tool_result": "total 0",
    "tool_succeeded": True,
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    if unsandboxed_requested():
        sys.exit("CONSOLE_HOOKS_UNSANDBOXED=1 is set: unset it, this measures the sandbox")
    hook = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)["spec"]["hooks"]["PostToolUse"][0]
    stdin = json.dumps(CONTEXT).encode()
    workdir = tempfile.mkdtemp(prefix="bench-hook-")
    script = Path(workdir) / "dangerous_command.py"
    script.write_text(hook["script"])
    script.chmod(0o700)
    loop = asyncio.new_event_loop()

    def sandboxed() -> None:
        result = run_command_hook(hook, CONTEXT)
        assert result.decision == "allow" and result.error is None, result

    def sandboxed_shared_loop() -> None:
        result = loop.run_until_complete(arun_command_hook(hook, CONTEXT))
        assert result.decision == "allow" and result.error is None, result

    # The same interpreter resolution as inside the sandbox (a pyenv shim first on the
    # caller's PATH would make the baseline slow and the ratio flattering).
    plain_env = {"PATH": SandboxConfig().path_env, "HOME": workdir, "LANG": "C.UTF-8"}

    def plain() -> None:
        done = subprocess.run(
            [str(script)], input=stdin, capture_output=True, check=True, env=plain_env
        )
        assert json.loads(done.stdout) == {"decision": "allow"}

    config = SandboxConfig()
    program = HookProgram("command", "exit 0")

    def setup_sandboxed() -> None:
        with prepared_invocation(
            program, CONTEXT, transcript_path=None, config=config, timeout=30
        ) as inv:
            subprocess.run(
                inv.argv,
                input=inv.stdin,
                capture_output=True,
                check=True,
                env=inv.env,
                cwd=inv.cwd,
                pass_fds=inv.pass_fds,
                start_new_session=True,
                user=inv.user,
                group=inv.group,
                extra_groups=[] if inv.group is not None else None,
            )

    def setup_plain() -> None:
        subprocess.run(
            ["/bin/bash", "-c", "exit 0"],
            input=stdin,
            capture_output=True,
            check=True,
            env=plain_env,
        )

    pairs = {
        "hook": {
            "sandboxed": sandboxed,
            "sandboxed_shared_loop": sandboxed_shared_loop,
            "plain": plain,
        },
        "setup": {"sandboxed": setup_sandboxed, "plain": setup_plain},
    }
    samples: dict[str, dict[str, list[float]]] = {k: {m: [] for m in v} for k, v in pairs.items()}
    for group, runners in pairs.items():
        for fn in runners.values():
            for _ in range(WARMUP):
                fn()
        names = list(runners)
        for i in range(n):
            # Interleaved, rotating which one goes first.
            for name in names[i % len(names) :] + names[: i % len(names)]:
                samples[group][name].append(timed(runners[name]))
    loop.close()

    print(
        f"hook overhead, sandboxed command hook vs plain subprocess.run (N={n} each, interleaved)"
    )
    print(f"python3 {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"{'case':48} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    labels = {
        ("hook", "sandboxed"): "seed script, run_command_hook (sandboxed)",
        ("hook", "sandboxed_shared_loop"): "seed script, arun_command_hook in one loop",
        ("hook", "plain"): "seed script, subprocess.run (unsandboxed)",
        ("setup", "sandboxed"): "bash -c 'exit 0', prlimit+bwrap argv",
        ("setup", "plain"): "bash -c 'exit 0', subprocess.run",
    }
    for (group, name), label in labels.items():
        xs = samples[group][name]
        print(
            f"{label:48} {percentile(xs, 0.5):8.2f} {percentile(xs, 0.95):8.2f} "
            f"{statistics.fmean(xs):8.2f}"
        )
    plain_xs = samples["hook"]["plain"]
    for name in ("sandboxed", "sandboxed_shared_loop"):
        xs = samples["hook"][name]
        p50 = percentile(xs, 0.5) / percentile(plain_xs, 0.5)
        p95 = percentile(xs, 0.95) / percentile(plain_xs, 0.95)
        verdict = "meets" if max(p50, p95) <= 1.5 else "MISSES"
        print(f"ratio {name} / plain: p50 {p50:.2f}x, p95 {p95:.2f}x ({verdict} the 1.5x target)")
    setup_cost = percentile(samples["setup"]["sandboxed"], 0.5) - percentile(
        samples["setup"]["plain"], 0.5
    )
    print(f"sandbox set-up (prlimit + bwrap namespaces and mounts), p50: {setup_cost:.2f} ms")


if __name__ == "__main__":
    main()
