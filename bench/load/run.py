"""Sustained mixed load with locust against a real console: daphne on loopback, PostgreSQL
(a fresh database on the machine's cluster), channels-redis and Celery (worker + beat) on a
private Redis. Prints throughput, p50/p95/p99 per request type, errors and 5xx; exits 1
on any 5xx or failure.

    PYTHONPATH=. .venv/bin/python bench/load/run.py [--seconds 180] [--sockets 20] ...
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import psycopg  # noqa: E402

from bench.faults.procs import ROOT, end, http_statuses, spawn  # noqa: E402
from bench.faults.rig import Rig, rig_down, rig_up  # noqa: E402

LOCUSTFILE = ROOT / "bench" / "load" / "locustfile.py"


@dataclass
class LoadResult:
    rows: list[dict[str, str]]
    seconds: float
    statuses: dict[str, int]
    records_stored: int
    escalations_decided: int

    @property
    def server_errors(self) -> int:
        return sum(n for code, n in self.statuses.items() if code.startswith("5"))

    @property
    def failures(self) -> int:
        return sum(int(row["Failure Count"]) for row in self.rows if row["Name"] != "Aggregated")

    @property
    def ok(self) -> bool:
        return self.server_errors == 0 and self.failures == 0

    def row(self, name: str) -> dict[str, str] | None:
        return next((row for row in self.rows if row["Name"] == name), None)

    def table(self) -> str:
        lines = [
            "| request | count | failures | req/s | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in self.rows:
            if row["Name"] == "Aggregated" or row["Type"] == "WS" and row["Name"] == "frame":
                continue
            count = int(row["Request Count"])
            lines.append(
                f"| {row['Type']} {row['Name']} | {count} | {row['Failure Count']} | "
                f"{count / self.seconds:.1f} | {row['50%']} | {row['95%']} | {row['99%']} |"
            )
        return "\n".join(lines)

    def summary(self) -> str:
        frames = self.row("frame")
        frame_count = int(frames["Request Count"]) if frames else 0
        http = sum(n for n in self.statuses.values())
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        verdict = "PASS" if self.ok else "FAIL"
        return (
            f"[{verdict}] load {self.seconds:.0f} s: {http} HTTP responses ({codes}); "
            f"5xx={self.server_errors} failures={self.failures}; "
            f"records stored {self.records_stored} ({self.records_stored / self.seconds:.0f}/s); "
            f"escalations decided {self.escalations_decided}; "
            f"websocket frames received {frame_count} ({frame_count / self.seconds:.1f}/s)"
        )


def _db_counts(rig: Rig) -> tuple[int, int]:
    with psycopg.connect(rig.database_url) as conn:
        records = conn.execute("SELECT count(*) FROM audit_interceptionrecord").fetchone()
        decided = conn.execute(
            "SELECT count(*) FROM approvals_escalation WHERE status <> 'pending'"
        ).fetchone()
    return int(records[0]) if records else 0, int(decided[0]) if decided else 0


def run_load(rig: Rig, options: argparse.Namespace) -> LoadResult:
    users = {
        "LOAD_RECORD_USERS": options.record_users,
        "LOAD_ESCALATING_USERS": options.escalating_users,
        "LOAD_REVIEWER_USERS": options.reviewers,
        "LOAD_SOCKET_USERS": options.sockets,
    }
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LOAD_AGENT_TOKEN": rig.agent_token,
        "LOAD_REVIEWER_TOKEN": rig.provisioned.reviewer_token,
        "LOAD_SESSIONS": ",".join(rig.provisioned.reviewer_sessions),
        **{key: str(value) for key, value in users.items()},
    }
    prefix = rig.workdir / "locust"
    args = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless"]
    args += ["--host", rig.console.url, "-u", str(sum(users.values())), "-r", "50"]
    args += ["-t", f"{options.seconds}s", "--stop-timeout", "5", "--csv", str(prefix)]
    args += ["--only-summary", "--loglevel", "WARNING"]
    records_before, decided_before = _db_counts(rig)
    log = rig.workdir / "daphne.log"
    log_offset = log.stat().st_size if log.exists() else 0
    started = time.monotonic()
    locust = spawn(args, env=env, log=rig.workdir / "locust.log")
    try:
        locust.wait(timeout=options.seconds + 120)
    finally:
        end(locust)
    seconds = time.monotonic() - started
    with (rig.workdir / "locust_stats.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    records, decided = _db_counts(rig)
    return LoadResult(rows, min(seconds, options.seconds), http_statuses(log, log_offset),
                      records - records_before, decided - decided_before)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mixed locust load on a live console.")
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--record-users", type=int, default=3, help="each 1 batch/s")
    parser.add_argument("--escalating-users", type=int, default=4)
    parser.add_argument("--reviewers", type=int, default=2)
    parser.add_argument("--sockets", type=int, default=20)
    parser.add_argument("--db", default=os.environ.get("LOAD_DB", "console_faults_bench"))
    options = parser.parse_args(argv)
    rig = rig_up(
        db_name=options.db,
        celery=True,
        sessions=max(1, options.sockets),
        approval_tools="restart_service",
    )
    result = None
    try:
        result = run_load(rig, options)
    except (OSError, subprocess.SubprocessError, KeyError) as exc:
        print(f"[FAIL] load did not complete: {exc}")
        return 1
    finally:
        locust_log = (rig.workdir / "locust.log").read_text(errors="replace")
        keep = result is None or not result.ok
        rig_down(rig, keep_workdir=keep)
        if keep:
            print(f"logs kept in {rig.workdir}")
    print(result.table())
    print(result.summary())
    if not result.ok:
        print(locust_log[-3000:])
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
