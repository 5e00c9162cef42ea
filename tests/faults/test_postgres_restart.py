"""PostgreSQL restarted with `pg_ctl -m immediate` (a crash and recovery) on a private
cluster during a 300 records/s stream: every record is stored exactly once (ingest answers
503 while the database is gone, the sink retries and spools)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bench.faults.procs import PgCluster
from bench.faults.records_faults import record_fault_run, restart_postgres
from bench.faults.rig import Rig, rig_down, rig_up

pytestmark = pytest.mark.slow
PARALLEL = 8


@pytest.fixture(scope="module")
def cluster_rig() -> Iterator[Rig]:
    if why := PgCluster.available():
        pytest.skip(f"no private PostgreSQL cluster here: {why}")
    rig = rig_up(db_name="console_faults", private_cluster=True)
    try:
        yield rig
    finally:
        rig_down(rig)


@pytest.mark.asyncio
async def test_every_record_is_stored_once_across_an_immediate_restart(cluster_rig):
    result = await record_fault_run(
        cluster_rig, "postgres", restart_postgres, rate=300, before=2, down=0, after=6
    )
    assert result.figures["pg_immediate_restarts"] == 1
    assert result.check.exactly_once, result.report()
    assert result.check.chain_consistent, result.report()
    assert result.spool_left == 0, result.report()


def test_no_request_fails_on_a_pooled_connection_the_restart_killed(cluster_rig):
    """The pool hands out only live connections: after the restart, reviewer reads and agent
    escalation reads answer 200 at once (not 500 'server closed the connection')."""
    reviewer = {"Authorization": f"Bearer {cluster_rig.provisioned.reviewer_token}"}
    agent = {"Authorization": f"Bearer {cluster_rig.agent_token}"}

    def burst() -> list[int]:
        def one(index: int) -> int:
            headers, path = (reviewer, "/api/v1/escalations") if index % 2 else (
                agent, "/api/v1/declaration")  # fmt: skip
            return httpx.get(
                cluster_rig.console.url + path, headers=headers, timeout=30
            ).status_code

        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            return list(pool.map(one, range(PARALLEL * 2)))

    assert set(burst()) == {200}  # several pooled connections are open now
    cluster_rig.cluster.restart_immediate()
    after = burst()
    assert after.count(200) == len(after), f"statuses after the restart: {after}"
