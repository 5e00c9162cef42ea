"""`manage.py audit_verify [--agent slug]`: walk each agent's record chain.

Prints `OK <n> records` and exits 0 when every chain holds; otherwise prints the FIRST
altered, deleted, reordered or inserted record per broken chain and exits 1.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit.chain import chain_verify, verifiable_agents


class Command(BaseCommand):
    help = "Verify the per-agent hash chains over interception records."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--agent", help="Verify only this agent (slug).")

    def handle(self, *args: Any, **options: Any) -> None:
        agents = verifiable_agents(options.get("agent"))
        if options.get("agent") and not agents.exists():
            raise CommandError(f"No agent {options['agent']!r}.")
        total, failures = 0, 0
        for agent in agents:
            report = chain_verify(agent)
            total += report.verified
            pending = f", {report.pending} pending" if report.pending else ""
            if report.problem is None:
                self.stdout.write(f"{agent.slug}: OK {report.verified} records{pending}")
                continue
            failures += 1
            problem = report.problem
            self.stdout.write(
                f"{agent.slug}: FAILED after {report.verified} verified records: "
                f"{problem.kind.upper()} {problem.detail}"
            )
        if failures:
            self.stdout.write(f"FAILED: {failures} chain(s) broken")
            raise SystemExit(1)
        self.stdout.write(f"OK {total} records")
