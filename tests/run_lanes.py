"""`make test`'s two lanes, run at once; fails if either fails.

- postgresql: the whole suite on PostgreSQL and Redis (DATABASE_URL and REDIS_URL as given).
- sqlite: the unit, API and portal tests on the embedded default `make run` uses (no
  DATABASE_URL/REDIS_URL: SQLite, in-memory channel layer, Celery in-process), without the
  tests marked `postgresql` or `redis`.

Each line of output is prefixed with its lane; each lane's summary and wall time closes the
run. Usage: python tests/run_lanes.py [pytest args for both lanes...]; with test paths among
them the sqlite lane runs those paths only (e.g. `make test PYTEST_ARGS=tests/audit`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The unit, API and portal tests; the browser, end-to-end, fault, real-client, security and
# conformance runs start their own servers on PostgreSQL and Redis.
SQLITE_PATHS = (
    "tests/console",
    "tests/agents",
    "tests/runtimes",
    "tests/approvals",
    "tests/audit",
    "tests/users",
    "tests/demo",
)
SQLITE_DESELECT = "not postgresql and not redis"
EMBEDDED_UNSET = ("DATABASE_URL", "REDIS_URL", "CHANNELS_PREFIX", "CELERY_TASK_ALWAYS_EAGER")


@dataclass
class Lane:
    name: str
    args: list[str]
    env: dict[str, str]
    process: subprocess.Popen[str] | None = None
    last_line: str = "(no output)"
    returncode: int | None = None
    seconds: float = 0.0


def pytest_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def _names_tests(arg: str) -> bool:
    return not arg.startswith("-") and (ROOT / arg.split("::", 1)[0]).exists()


def lanes(extra: list[str], scratch: str) -> list[Lane]:
    """Both lanes get `extra`; when it names tests, the sqlite lane runs those instead of
    SQLITE_PATHS (still without the postgresql/redis ones)."""
    embedded = {k: v for k, v in os.environ.items() if k not in EMBEDDED_UNSET}
    embedded["SQLITE_PATH"] = str(Path(scratch) / "console.sqlite3")
    paths = [] if any(_names_tests(arg) for arg in extra) else list(SQLITE_PATHS)
    return [
        Lane("postgresql", pytest_command(extra), dict(os.environ)),
        Lane("sqlite", pytest_command(["-m", SQLITE_DESELECT, *paths, *extra]), embedded),
    ]


def _run_lane(lane: Lane, width: int) -> None:
    """Start the lane's pytest, prefix and forward its output, record its exit and time."""
    began = time.monotonic()
    process = subprocess.Popen(
        lane.args,
        cwd=ROOT,
        env=lane.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    lane.process = process
    assert process.stdout is not None
    prefix = f"[{lane.name:<{width}}] "
    for line in process.stdout:
        sys.stdout.write(prefix + line)
        sys.stdout.flush()
        if line.strip():
            lane.last_line = line.strip()
    lane.returncode = process.wait()
    lane.seconds = time.monotonic() - began


def run(lanes: list[Lane]) -> int:
    width = max(len(lane.name) for lane in lanes)
    threads = [threading.Thread(target=_run_lane, args=(lane, width)) for lane in lanes]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        for lane in lanes:
            if lane.process is not None:
                lane.process.terminate()
        raise
    print()
    for lane in lanes:
        verdict = "ok" if lane.returncode == 0 else f"FAILED (exit {lane.returncode})"
        print(f"lane {lane.name}: {verdict} in {lane.seconds:.0f} s: {lane.last_line}")
    return 0 if all(lane.returncode == 0 for lane in lanes) else 1


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="console-sqlite-lane-") as scratch:
        return run(lanes(argv, scratch))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
