"""A running stack for one fault run: database (a fresh DB on the shared cluster, or a private
cluster), a private Redis, the console under daphne, optionally Celery worker + beat."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.faults.procs import (
    Celery,
    Console,
    PgCluster,
    Provisioned,
    RedisServer,
    console_env,
    drop_database,
    provision,
    recreate_database,
    shared_pg_server,
)


@dataclass
class Rig:
    workdir: Path
    database_url: str
    server_url: str
    db_name: str
    redis: RedisServer
    console: Console
    provisioned: Provisioned
    env: dict[str, str]
    celery: Celery | None = None
    cluster: PgCluster | None = None

    @property
    def agent_token(self) -> str:
        return self.provisioned.agent_token

    def client_dirs(self) -> dict[str, Any]:
        return {
            "cache_dir": self.workdir / "client-cache",
            "spool_dir": self.workdir / "client-spool",
        }


def rig_up(
    *,
    db_name: str,
    private_cluster: bool = False,
    celery: bool = False,
    sessions: int = 0,
    approval_tools: str = "",
    extra_env: dict[str, str] | None = None,
) -> Rig:
    """Start everything; on failure, what started is ended before raising."""
    workdir = Path(tempfile.mkdtemp(prefix="faults-"))
    cluster = None
    redis = RedisServer(workdir)
    rig: Rig | None = None
    try:
        if private_cluster:
            cluster = PgCluster()
            cluster.create()
        server_url = cluster.server_url if cluster else shared_pg_server()
        database_url = recreate_database(server_url, db_name)
        redis.start()
        env = console_env(database_url, redis.url, **(extra_env or {}))
        provisioned = provision(env, sessions=sessions, approval_tools=approval_tools)
        console = Console(env, workdir)
        rig = Rig(workdir, database_url, server_url, db_name, redis, console, provisioned, env,
                  cluster=cluster)  # fmt: skip
        console.start()
        if celery:
            rig.celery = Celery(env, workdir)
            rig.celery.start_worker()
            rig.celery.start_beat()
        return rig
    except BaseException:
        if rig is not None:
            rig_down(rig)
        else:
            redis.kill()
            if cluster is not None:
                cluster.remove()
            shutil.rmtree(workdir, ignore_errors=True)
        raise


def rig_down(rig: Rig, *, keep_workdir: bool = False) -> None:
    if rig.celery is not None:
        rig.celery.stop()
    rig.console.stop()
    rig.redis.kill()
    if rig.cluster is not None:
        rig.cluster.remove()
    else:
        drop_database(rig.server_url, rig.db_name)
    if not keep_workdir:
        shutil.rmtree(rig.workdir, ignore_errors=True)
