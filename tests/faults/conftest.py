"""A live stack for the fault tests: a fresh database on the PostgreSQL server of
DATABASE_URL, a private Redis, the console under daphne (bench/faults/rig.py). One stack
per session; tests that break something put it back before they end."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.faults.rig import Rig, rig_down, rig_up

APPROVAL_TOOLS = "restart_service"
SOCKETS = 5


def _needs_postgres() -> None:
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        pytest.skip("fault tests need PostgreSQL: set DATABASE_URL (make test does)")


@pytest.fixture(scope="session")
def shared_rig() -> Iterator[Rig]:
    _needs_postgres()
    rig = rig_up(
        db_name=f"faults_ci_{os.getpid()}", approval_tools=APPROVAL_TOOLS, sessions=SOCKETS
    )
    try:
        yield rig
    finally:
        rig_down(rig)


@pytest.fixture
def live_rig(shared_rig: Rig) -> Iterator[Rig]:
    """The shared stack, with the console and Redis running again after the test."""
    yield shared_rig
    if shared_rig.redis.process is None or shared_rig.redis.process.poll() is not None:
        shared_rig.redis.start()
    console = shared_rig.console.process
    if console is None or console.poll() is not None:
        shared_rig.console.start()
