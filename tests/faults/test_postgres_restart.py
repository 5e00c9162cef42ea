"""PostgreSQL restarted with `pg_ctl -m immediate` (a crash and recovery) on a private
cluster during a 300 records/s stream: every record is stored exactly once (ingest answers
503 while the database is gone, the sink retries and spools)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.faults.procs import PgCluster
from bench.faults.records_faults import record_fault_run, restart_postgres
from bench.faults.rig import Rig, rig_down, rig_up

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster_rig() -> Iterator[Rig]:
    if why := PgCluster.available():
        pytest.skip(f"no private PostgreSQL cluster here: {why}")
    rig = rig_up(db_name="console_faults", private_cluster=True)
    try:
        yield rig
    finally:
        rig_down(rig)


async def test_every_record_is_stored_once_across_an_immediate_restart(cluster_rig):
    result = await record_fault_run(
        cluster_rig, "postgres", restart_postgres, rate=300, before=2, down=0, after=6
    )
    assert result.figures["pg_immediate_restarts"] == 1
    assert result.check.exactly_once, result.report()
    assert result.check.chain_consistent, result.report()
    assert result.spool_left == 0, result.report()
