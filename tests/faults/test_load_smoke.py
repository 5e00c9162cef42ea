"""A shortened mixed locust load (~15 s: record batches, escalations with long-polls,
reviewer decisions, inbox websockets) against the live console: no 5xx, no failures."""

from __future__ import annotations

import argparse

import pytest

from bench.load.run import run_load
from tests.faults.conftest import SOCKETS

pytestmark = pytest.mark.slow


def test_a_short_mixed_load_has_no_server_errors_and_no_failures(live_rig):
    options = argparse.Namespace(
        seconds=15, record_users=2, escalating_users=2, reviewers=1, sockets=SOCKETS
    )
    result = run_load(live_rig, options)
    print(result.table())
    print(result.summary())
    assert result.server_errors == 0, result.summary()
    assert result.failures == 0, result.summary()
    assert result.records_stored > 0 and result.escalations_decided > 0, result.summary()
    frames = result.row("frame")
    assert frames is not None and int(frames["Request Count"]) > 0, "no websocket frame arrived"
