"""Fault runs against a real console (daphne on loopback, own PostgreSQL DB or cluster, own
Redis, Celery worker + beat): print a verdict line with figures per scenario; exit 1 if any
fails. Every process started here is ended at exit.

    PYTHONPATH=. .venv/bin/python bench/faults/run.py [--ci] [--source sdk|agent] SCENARIO...

Scenarios: redis, celery, postgres, console (records streamed by console_client while the
component is broken: every record produced is stored exactly once), approvals-push-lost
(Redis killed while agents wait: decisions reach them within one long-poll period),
approvals-unreachable (console down: the escalated call fails closed), approvals-postgres
(PostgreSQL restarted while agents wait: decisions are taken and reach them), or all.
`--ci` is the shortened form (outage ~10 s instead of up to 60 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.faults.approvals_faults import (  # noqa: E402
    decision_across_pg_restart,
    decisions_reach_agent,
    unreachable_fails_closed,
)
from bench.faults.procs import PgCluster  # noqa: E402
from bench.faults.records_faults import FAULTS, record_fault_run  # noqa: E402
from bench.faults.rig import rig_down, rig_up  # noqa: E402

RECORD_SCENARIOS = ("redis", "celery", "postgres", "console")
ALL = (*RECORD_SCENARIOS, "approvals-push-lost", "approvals-unreachable", "approvals-postgres")
# (before, down, after) seconds of the record stream around each fault.
FULL = {"redis": (5, 20, 15), "celery": (5, 15, 15), "postgres": (5, 10, 15),
        "console": (5, 60, 20)}  # fmt: skip
CI = {"redis": (3, 5, 8), "celery": (3, 5, 8), "postgres": (3, 3, 8), "console": (3, 10, 10)}
DB_NAME = os.environ.get("FAULTS_DB", "console_faults")


async def run_records(name: str, options: argparse.Namespace) -> tuple[bool, str]:
    before, down, after = (CI if options.ci else FULL)[name]
    private = name == "postgres"
    if private and (why := PgCluster.available()):
        return True, f"[SKIP] postgres: no private cluster ({why})"
    rig = rig_up(db_name=DB_NAME, private_cluster=private, celery=True)
    try:
        result = await record_fault_run(
            rig,
            name,
            FAULTS[name],
            rate=options.rate,
            before=before,
            down=down,
            after=after,
            source=options.source,
            wait_seals=not options.ci,
        )
    finally:
        rig_down(rig)
    return result.ok, result.report()


async def run_approvals(name: str, options: argparse.Namespace) -> tuple[bool, str]:
    private = name == "approvals-postgres"
    if private and (why := PgCluster.available()):
        return True, f"[SKIP] {name}: no private cluster ({why})"
    rig = rig_up(db_name=DB_NAME, approval_tools="restart_service", celery=True,
                 private_cluster=private)  # fmt: skip
    try:
        if private:
            result = await decision_across_pg_restart(rig, escalations=2 if options.ci else 5)
            return result.ok, result.report()
        if name == "approvals-push-lost":
            baseline = await decisions_reach_agent(
                rig, name="push intact (baseline)", escalations=3, kill_redis=False
            )
            lost = await decisions_reach_agent(
                rig, name="push lost (Redis killed)", escalations=3 if options.ci else 10
            )
            return baseline.ok and lost.ok, f"{baseline.report()}\n{lost.report()}"
        lines, ok = [], True
        for when in ("before", "waiting"):
            result = await unreachable_fails_closed(rig, when=when)
            ok = ok and result.ok
            lines.append(result.report())
        return ok, "\n".join(lines)
    finally:
        rig_down(rig)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("scenarios", nargs="+", choices=[*ALL, "all"])
    parser.add_argument("--ci", action="store_true", help="shortened outages")
    parser.add_argument("--rate", type=float, default=300.0, help="records per second")
    parser.add_argument("--source", choices=("sdk", "agent"), default="sdk")
    options = parser.parse_args(argv)
    names = list(ALL) if "all" in options.scenarios else options.scenarios
    failed = 0
    for name in names:
        started = time.monotonic()
        runner: Any = run_records if name in RECORD_SCENARIOS else run_approvals
        try:
            ok, report = await runner(name, options)
        except Exception as exc:  # noqa: BLE001 - a broken scenario is a failed verdict
            ok, report = False, f"[FAIL] {name}: {type(exc).__name__}: {exc}"
        failed += not ok
        print(f"{report}\n  ({name}: {time.monotonic() - started:.0f} s wall)", flush=True)
    print(f"fault scenarios: {len(names) - failed} of {len(names)} held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
