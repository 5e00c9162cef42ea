"""Benchmark (b) of issue 3: one sandboxed command hook vs the same script run unsandboxed.

The hook is the seed's dangerous-command PostToolUse script (python3), unchanged:

- sandboxed: `console_client.run_command_hook` (prlimit + bubblewrap, the whole runner:
  context on stdin, capped capture, answer parsing) — and `arun_command_hook` awaited in one
  long-lived event loop, which is how the agent middleware calls it;
- plain: `subprocess.run([script], input=context)` with the same script file, no sandbox,
  and the same PATH as inside the sandbox (so both start the same python3).

Runs are interleaved (N each, default 200) after a warm-up. A second pair isolates the
sandbox set-up itself: `bash -c 'exit 0'` through the runner's prlimit+bwrap command line
vs the same bash started directly. Targets: sandboxed p50/p95 ≤ 1.5× plain (issue 3) and
≤ 1.3× (issue 14, item 6). The load average is printed before and after.

`--profile` then says where the set-up time goes: the same `bash -c 'exit 0'` through the
full command line and through the command line without one piece at a time (the root
agent's id switch, prlimit, bwrap's PID-1 reaper, the network namespace, /proc, /dev,
--disable-userns, LANG and the locale files it makes prlimit and bash load),
interleaved; each piece's cost is the full line's p50 minus the line without it. Those
variants only measure: the runner never drops any of them.

    .venv/bin/python bench/hook_overhead_sandbox.py [N] [--profile]
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


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def interleaved(runners: dict[str, Callable[[], None]], n: int) -> dict[str, list[float]]:
    """n timed runs of each after WARMUP untimed ones, rotating which goes first."""
    for fn in runners.values():
        for _ in range(WARMUP):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for i in range(n):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            samples[name].append(timed(runners[name]))
    return samples


def _without(argv: list[str], option: str, values: int = 0) -> list[str]:
    """argv without its first `option` and the `values` arguments that follow it."""
    i = argv.index(option)
    return argv[:i] + argv[i + 1 + values :]


def profile(n: int) -> None:
    """Where the sandbox set-up time goes (module docstring)."""
    config = SandboxConfig()
    with prepared_invocation(
        HookProgram("command", "exit 0"), CONTEXT, transcript_path=None, config=config, timeout=30
    ) as inv:
        full, ids = inv.spawn_args()
        if ids:
            sys.exit("--profile needs unshare (or a non-root agent)")
        bwrap = full.index(config.bwrap_path)
        switch, sandbox = full[:bwrap], full[bwrap:]
        limits = sandbox.index(config.prlimit_path)
        no_limits = sandbox[:limits] + sandbox[sandbox.index("--", limits) + 1 :]
        dev_ro = sandbox.index("--remount-ro", sandbox.index("--dev"))
        no_dev = sandbox[: sandbox.index("--dev")] + sandbox[dev_ro + 2 :]
        lang = sandbox.index("LANG")  # --setenv LANG C.UTF-8
        no_lang = sandbox[: lang - 1] + sandbox[lang + 2 :]
        namespaces = ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts"]
        no_net = [config.bwrap_path, *namespaces, "--unshare-cgroup-try"]
        no_net += _without(sandbox[1:], "--unshare-all")
        variants = {
            "full command line": full,
            "  without the id switch (bwrap as root)": sandbox,
            "  without prlimit": switch + no_limits,
            "  without the PID-1 reaper (--as-pid-1)": switch
            + [config.bwrap_path, "--as-pid-1", *sandbox[1:]],
            "  without the network namespace": switch + no_net,
            "  without /proc": switch + _without(sandbox, "--proc", 1),
            "  without /dev": switch + no_dev,
            "  without --disable-userns": switch + _without(sandbox, "--disable-userns"),
            "  without LANG (locale files)": switch + no_lang,
            "bash -c 'exit 0', subprocess.run": ["/bin/bash", "-c", "exit 0"],
        }

        def runner(argv: list[str]) -> Callable[[], None]:
            def run() -> None:
                subprocess.run(
                    argv,
                    input=inv.stdin,
                    capture_output=True,
                    check=True,
                    env=inv.env,
                    cwd=inv.cwd,
                    pass_fds=inv.pass_fds,
                    start_new_session=True,
                )

            return run

        before = load()
        samples = interleaved({name: runner(argv) for name, argv in variants.items()}, n)
    print(f"\nwhere the set-up goes (N={n} each, interleaved; load {before} -> {load()})")
    full_p50 = percentile(samples["full command line"], 0.5)
    print(f"{'command line':48} {'p50 ms':>8} {'p95 ms':>8} {'piece ms':>9}")
    for name, xs in samples.items():
        p50 = percentile(xs, 0.5)
        piece = f"{full_p50 - p50:9.2f}" if name.startswith("  ") else ""
        print(f"{name:48} {p50:8.2f} {percentile(xs, 0.95):8.2f} {piece}")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--profile"]
    n = int(args[0]) if args else 200
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
            # Started as the runner starts it (a root agent: through unshare).
            argv, ids = inv.spawn_args()
            subprocess.run(
                argv,
                input=inv.stdin,
                capture_output=True,
                check=True,
                env=inv.env,
                cwd=inv.cwd,
                pass_fds=inv.pass_fds,
                start_new_session=True,
                **ids,
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
    before = load()
    samples = {group: interleaved(runners, n) for group, runners in pairs.items()}
    loop.close()

    print(
        f"hook overhead, sandboxed command hook vs plain subprocess.run (N={n} each, interleaved)"
    )
    print(f"python3 {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {before} -> {load()}")
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
        verdicts = ", ".join(
            f"{'meets' if max(p50, p95) <= target else 'MISSES'} {target}x" for target in (1.5, 1.3)
        )
        print(f"ratio {name} / plain: p50 {p50:.2f}x, p95 {p95:.2f}x ({verdicts})")
    setup_cost = percentile(samples["setup"]["sandboxed"], 0.5) - percentile(
        samples["setup"]["plain"], 0.5
    )
    print(f"sandbox set-up (prlimit + bwrap namespaces and mounts), p50: {setup_cost:.2f} ms")
    if "--profile" in sys.argv[1:]:
        profile(n)


if __name__ == "__main__":
    main()
