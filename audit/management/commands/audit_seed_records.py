"""`manage.py audit_seed_records --count N [--agents a,b] [--days D]`: synthetic records.

For benchmarks and load tests on PostgreSQL: rows are generated inside the database with
`INSERT … SELECT generate_series` (no Python per row), in chunks of --chunk rows, one
transaction each. Sessions of 10 records (agent_startup … agent_shutdown), outcomes in
realistic proportions (85% allowed, 5% warned, 5% denied, 1% transformed, 2% approved,
1% rejected, 0.5% expired, 0.5% host_error), 20 hook ids, 6 tool names, timestamps
spread evenly over the last --days days. Seeded rows are NOT in the hash chain (they
never went through ingest): `audit_verify` reports them as inserted. Use a bench
database, never production.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from agents import services as agent_services
from agents.models import Agent
from console import embedded

# Parameters: agents (agent ids), run (session-id prefix), first/last (g range), base,
# total, start (epoch seconds), span (seconds). Everything else is fixed SQL.
SEED_SQL = """
WITH g AS (
  SELECT g, abs(hashint8(g)) %% 1000 AS h, g %% 10 AS seq, g / 10 AS sess
  FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g
), r AS MATERIALIZED (
  SELECT g, seq, sess, h,
    (%(agents)s::bigint[])[1 + (sess %% cardinality(%(agents)s::bigint[]))] AS agent_id,
    CASE WHEN h < 850 THEN 'allowed' WHEN h < 900 THEN 'warned' WHEN h < 950 THEN 'denied'
         WHEN h < 960 THEN 'transformed' WHEN h < 980 THEN 'approved'
         WHEN h < 990 THEN 'rejected' WHEN h < 995 THEN 'expired' ELSE 'host_error' END
      AS outcome,
    (ARRAY['agent_startup','input','pre_model_call','post_model_call','pre_tool_call',
           'post_tool_call','pre_tool_call','post_tool_call','output','agent_shutdown'])[seq + 1]
      AS point,
    to_timestamp(%(start)s + (g - %(base)s)::float8 * %(span)s / %(total)s) AS ts
  FROM g
), d AS MATERIALIZED (
  SELECT r.*,
    CASE WHEN outcome IN ('allowed','warned','approved') THEN 'allow'
         WHEN outcome = 'transformed' THEN 'transform' ELSE 'deny' END AS decision,
    CASE outcome WHEN 'warned' THEN 'audited_tool'
         WHEN 'denied' THEN (ARRAY['dangerous_command','policy:pii','rm_rf_blocked'])[1 + g %% 3]
         WHEN 'rejected' THEN 'reviewer_rejected' WHEN 'expired' THEN 'approval_expired'
         WHEN 'host_error' THEN 'host_error:interceptor_timeout'
         WHEN 'approved' THEN 'needs_approval' ELSE '' END AS reason,
    CASE outcome WHEN 'approved' THEN 'approval' WHEN 'rejected' THEN 'rejection'
         WHEN 'expired' THEN 'rejection' ELSE '' END AS resolved_by,
    'hk_guard' || lpad((g %% 20)::text, 4, '0') AS hook,
    CASE WHEN point IN ('pre_tool_call','post_tool_call')
         THEN (ARRAY['Bash','ExecuteShellCommand','ReadFile','GrepSearch','deploy','kubectl'])
              [1 + (g / 2) %% 6] ELSE '' END AS tool,
    'seed-' || %(run)s || '-' || sess AS session_id,
    'sha256:' || md5(g::text) || md5((g + 7)::text) AS identity
  FROM r
)
INSERT INTO audit_interceptionrecord (
  agent_id, custom_agent, session_id, sequence, interception_point, mode, decision, outcome,
  reason, resolved_by, decided_by, decided_hook, fold_truncated, input_identity,
  enforced_identity, timestamp, received_at, hook_ids, tool_name, framework, revision, raw)
SELECT agent_id, (ARRAY['','triage','deployer'])[1 + sess %% 3], session_id, seq, point,
  CASE WHEN agent_id %% 5 = 4 THEN 'evaluate_only' ELSE 'enforce' END, decision, outcome,
  reason, resolved_by, CASE WHEN decision = 'allow' AND resolved_by = '' THEN NULL ELSE 0 END,
  CASE WHEN decision = 'allow' AND resolved_by = '' THEN '' ELSE hook END,
  decision <> 'allow', identity, identity, ts, ts + interval '50 milliseconds',
  ARRAY[hook, 'hk_audit0001'], tool, 'agent_framework', '3',
  jsonb_build_object(
    'interception_point', point,
    'mode', CASE WHEN agent_id %% 5 = 4 THEN 'evaluate_only' ELSE 'enforce' END,
    'verdict', CASE WHEN reason = '' THEN jsonb_build_object('decision', decision)
                    ELSE jsonb_build_object('decision', decision, 'reason', reason) END,
    'input_identity', identity, 'enforced_identity', identity,
    'identity_provider', 'jcs-sha256', 'session_id', session_id, 'sequence', seq,
    'decided_by', NULL,
    'composition', jsonb_build_object('profile', 'sequential/first_deny', 'on_approval', 'stop'),
    'timestamp', to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'verdicts', jsonb_build_array(
      jsonb_build_object('index', 0, 'decision', decision, 'name', hook),
      jsonb_build_object('index', 1, 'decision', 'allow', 'name', 'hk_audit0001')),
    'fold_truncated', decision <> 'allow',
    'interceptors_registered', 2)
FROM d
"""


def seed_records(
    *, agent_ids: list[int], count: int, days: float, chunk: int, log: Any = None
) -> float:
    """Insert `count` synthetic records; returns the seconds it took."""
    if not embedded.database_is_postgresql():
        raise CommandError("audit_seed_records generates rows in PostgreSQL only.")
    run = secrets.token_hex(4)
    span = days * 86400.0
    start = time.time() - span
    began = time.perf_counter()
    for first in range(0, count, chunk):
        last = min(first + chunk, count) - 1
        params: dict[str, Any] = {
            "agents": agent_ids,
            "run": run,
            "first": first,
            "last": last,
            "base": 0,
            "total": count,
            "start": start,
            "span": span,
        }
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(SEED_SQL, params)
        if log is not None:
            rate = (last + 1) / max(time.perf_counter() - began, 1e-9)
            log(f"seeded {last + 1}/{count} ({rate:,.0f} rows/s)")
    return time.perf_counter() - began


class Command(BaseCommand):
    help = "Seed synthetic interception records (PostgreSQL; for benchmarks)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--agents", default="bench-agent", help="Comma-separated slugs.")
        parser.add_argument("--days", type=float, default=30.0)
        parser.add_argument("--chunk", type=int, default=100_000)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["count"] < 1 or options["chunk"] < 1:
            raise CommandError("--count and --chunk must be positive.")
        slugs = [slug.strip() for slug in options["agents"].split(",") if slug.strip()]
        agents = []
        for slug in slugs:
            agent = Agent.objects.filter(slug=slug).first()
            agents.append(agent or agent_services.agent_create(actor=None, slug=slug))
        seconds = seed_records(
            agent_ids=[agent.pk for agent in agents],
            count=options["count"],
            days=options["days"],
            chunk=options["chunk"],
            log=self.stdout.write if options["verbosity"] > 1 else None,
        )
        self.stdout.write(f"seeded {options['count']} records in {seconds:.1f}s")
