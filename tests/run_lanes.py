"""`make test`'s lanes, run at once; fails if any fails.

- postgresql, postgresql-units: the whole suite on PostgreSQL and Redis, in two halves run at
  once (the server, browser and client runs with DATABASE_URL and REDIS_URL as given; every
  other test directory on `<database>_units` and the next Redis db), but for
- postgresql-after-sqlite: a few directories (AFTER_SQLITE_PATHS, the security runs among
  them) on `<database>_units2` and the Redis db after that, started when the sqlite lane
  ends, in its thread;
- sqlite: the unit, API and portal tests on the embedded default `make run` uses (no
  DATABASE_URL/REDIS_URL: SQLite, in-memory channel layer, Celery in-process), without the
  tests marked `postgresql` or `redis`.

Each line of output is prefixed with its lane; each lane's summary and wall time closes the
run. Usage: python tests/run_lanes.py [pytest args for every lane...]; with test paths among
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
# The runs that start their own servers, browsers and clients; the PostgreSQL lane is split
# in two (these, and every other test directory) so both cores stay busy once the shorter
# sqlite lane ends. The second half gets its own database, Redis db and channel prefix.
SERVER_PATHS = (
    "tests/browser",
    "tests/conformance",
    "tests/e2e",
    "tests/faults",
    "tests/reach_clients",
)
# Folders that run on PostgreSQL after the sqlite lane, in its thread (a database, Redis db
# and channel prefix of their own): the sqlite lane ends minutes before the two PostgreSQL
# halves, and at most three suites then run at once on the two cores. The security runs
# (servers of their own too) came from the server half, the longest lane.
AFTER_SQLITE_PATHS = (
    "tests/console",
    "tests/runtimes",
    "tests/users",
    "tests/demo",
    "tests/security",
)
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
    then: Lane | None = None  # run after this one, in its thread


def pytest_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def _names_tests(arg: str) -> bool:
    return not arg.startswith("-") and (ROOT / arg.split("::", 1)[0]).exists()


def lanes(extra: list[str], scratch: str) -> list[Lane]:
    """Both lanes get `extra`; when it names tests, the sqlite lane runs those instead of
    SQLITE_PATHS (still without the postgresql/redis ones)."""
    embedded = {k: v for k, v in os.environ.items() if k not in EMBEDDED_UNSET}
    embedded["SQLITE_PATH"] = str(Path(scratch) / "console.sqlite3")
    named = any(_names_tests(arg) for arg in extra)
    paths = [] if named else list(SQLITE_PATHS)
    sqlite = Lane("sqlite", pytest_command(["-m", SQLITE_DESELECT, *paths, *extra]), embedded)
    if named:
        return [Lane("postgresql", pytest_command(extra), dict(os.environ)), sqlite]
    sqlite.then = Lane(
        "postgresql-after-sqlite",
        pytest_command([*AFTER_SQLITE_PATHS, *extra]),
        units_env(2),
    )
    return [
        Lane("postgresql", pytest_command([*SERVER_PATHS, *extra]), dict(os.environ)),
        Lane("postgresql-units", pytest_command([*unit_paths(), *extra]), units_env(1)),
        sqlite,
    ]


def unit_paths() -> list[str]:
    """Every test directory the server half and the lane after sqlite do not run."""
    found = sorted(
        f"tests/{folder.name}"
        for folder in (ROOT / "tests").iterdir()
        if folder.is_dir() and any(folder.glob("test_*.py"))
    )
    return [path for path in found if path not in (*SERVER_PATHS, *AFTER_SQLITE_PATHS)]


def units_env(lane: int) -> dict[str, str]:
    """The environment as given, on a database, Redis db and channel prefix of its own:
    `<database>_units`, the next Redis db and "units" for lane 1; `_units2`, +2, "units2"…"""
    name = "units" if lane == 1 else f"units{lane}"
    env = dict(os.environ)
    if env.get("DATABASE_URL"):
        env["DATABASE_URL"] = env["DATABASE_URL"].rstrip("/") + f"_{name}"
    if env.get("REDIS_URL"):
        base, _, number = env["REDIS_URL"].rpartition("/")
        env["REDIS_URL"] = f"{base}/{(int(number) if number.isdigit() else 0) + lane}"
    env["CHANNELS_PREFIX"] = name
    return env


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
    if lane.then is not None:
        _run_lane(lane.then, width)


def _chained(lanes: list[Lane]) -> list[Lane]:
    """Every lane, each followed by the ones run after it."""
    found: list[Lane] = []
    for lane in lanes:
        step: Lane | None = lane
        while step is not None:
            found.append(step)
            step = step.then
    return found


def run(lanes: list[Lane]) -> int:
    width = max(len(lane.name) for lane in _chained(lanes))
    threads = [threading.Thread(target=_run_lane, args=(lane, width)) for lane in lanes]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        for lane in _chained(lanes):
            if lane.process is not None:
                lane.process.terminate()
        raise
    print()
    for lane in _chained(lanes):
        verdict = "ok" if lane.returncode == 0 else f"FAILED (exit {lane.returncode})"
        print(f"lane {lane.name}: {verdict} in {lane.seconds:.0f} s: {lane.last_line}")
    return 0 if all(lane.returncode == 0 for lane in _chained(lanes)) else 1


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="console-sqlite-lane-") as scratch:
        return run(lanes(argv, scratch))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
