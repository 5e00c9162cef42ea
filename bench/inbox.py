"""A long reviewer inbox: what the re-sync frame and the page cost with hundreds of open
escalations, capped (`CONSOLE_INBOX_ROWS`, 100 by default) against uncapped (the cap set to
the number open, as before the cap), in the same run.

    .venv/bin/python bench/inbox.py [--pending 300] [--repeat 15]

Works in its own PostgreSQL database (BENCH_DATABASE_URL, default `console_inbox_bench`),
emptied of escalations at the start. Each open escalation carries arguments and a transcript
of the sizes an SRE agent sends (about 0.3 KB and 2 KB). Timed in-process: the socket's
re-sync (`approvals.frames.resync`, the frames a reviewer's inbox gets on every connect and
refill) and `GET /approvals/` through Django's test client; p50/p95 and the frame's size.
"""

from __future__ import annotations

import argparse
import os
from datetime import timedelta

os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console_inbox_bench"
)

from audit_common import setup_django, timed  # noqa: E402

TRANSCRIPT = "\n".join(
    f"{'user' if n % 2 else 'assistant'}: step {n}: checking the deployment of payments-api "
    "in eu-west-1, the pods restart every few minutes with OOMKilled"
    for n in range(20)
)


def seed(pending: int) -> object:
    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from agents.models import Agent
    from approvals.models import Escalation
    from console.roles import Role

    Escalation.objects.all().delete()
    reviewer, _ = User.objects.get_or_create(username="bench-reviewer")
    reviewer.groups.add(Group.objects.get_or_create(name=Role.REVIEWER)[0])
    agent, _ = Agent.objects.get_or_create(slug="bench-sre")
    now = timezone.now()
    Escalation.objects.bulk_create(
        Escalation(
            agent=agent,
            interception_point="pre_tool_call",
            tool_name="restart_service",
            session_id=f"session-{n}",
            framework="agent-framework",
            verdict_reason="approval_required",
            expires_at=now + timedelta(minutes=10, seconds=n),
            arguments={
                "service": f"payments-{n}",
                "region": "eu-west-1",
                "replicas": 3,
                "reason": "pods restart every few minutes with OOMKilled",
            },
            transcript=TRANSCRIPT,
        )
        for n in range(pending)
    )
    return reviewer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    setup_django()
    from django.conf import settings
    from django.test import Client

    from approvals import frames

    reviewer = seed(args.pending)
    client = Client()
    client.force_login(reviewer)
    cap = settings.CONSOLE_INBOX_ROWS
    print(f"{args.pending} open escalations; {args.repeat} timed runs each, in-process")
    results = {}
    for label, rows in (("uncapped (before)", args.pending), (f"capped at {cap}", cap)):
        settings.CONSOLE_INBOX_ROWS = rows
        r50, r95 = timed(lambda: frames.resync(reviewer, "inbox"), args.repeat)
        size = sum(len(part.encode()) for part in frames.resync(reviewer, "inbox"))
        p50, p95 = timed(lambda: client.get("/approvals/"), args.repeat)
        results[label] = (r95, p95)
        print(
            f"{label:<20} re-sync p50 {r50:7.1f} ms  p95 {r95:7.1f} ms  {size / 1024:8.1f} KiB"
            f"   page p50 {p50:7.1f} ms  p95 {p95:7.1f} ms"
        )
    (before_sync, before_page), (after_sync, after_page) = results.values()
    print(
        f"capped / uncapped p95: re-sync {after_sync / before_sync:.2f}×, "
        f"page {after_page / before_page:.2f}×"
    )


if __name__ == "__main__":
    main()
