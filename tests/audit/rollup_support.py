"""The rollup tables against the records they count (tests of the dashboard and the sealer)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from audit import rollups
from audit.models import (
    InterceptionRecord,
    RecordProblemRollup,
    RecordRollup,
    RecordSealPending,
    RollupGrain,
)


def stored_counts() -> tuple[dict[Any, list[int]], dict[Any, list[Any]]]:
    """The rollup tables' contents, keyed as rollups.aggregate keys them."""
    base = {
        (r.grain, r.bucket, r.agent_id, r.outcome, r.mode): [r.records, r.startups]
        for r in RecordRollup.objects.all()
    }
    problems = {
        (r.grain, r.bucket, r.agent_id, r.outcome, r.detail): [
            r.records,
            r.decided_hook,
            r.reason,
            r.message,
        ]
        for r in RecordProblemRollup.objects.all()
    }
    return base, problems


# Minute rows this much older than now may be gone (pruned, or not rebuilt): not compared.
MINUTES_COMPARED = rollups.MINUTE_ROWS_KEPT + dt.timedelta(days=1)


def assert_rollups_match_records() -> None:
    """The rollups hold exactly the records not waiting for their seal (minute rows only
    within MINUTE_ROWS_KEPT)."""
    waiting = {
        pk for ids in RecordSealPending.objects.values_list("record_ids", flat=True) for pk in ids
    }
    expected_base, expected_problems = rollups.aggregate(
        rollups._values(InterceptionRecord.objects.exclude(pk__in=waiting))
    )
    horizon = timezone.now() - MINUTES_COMPARED
    base, problems = stored_counts()
    for stored, expected in ((base, expected_base), (problems, expected_problems)):
        old_minutes = {
            key for key in {*stored, *expected} if key[0] == RollupGrain.MINUTE and key[1] < horizon
        }
        assert {k: v for k, v in stored.items() if k not in old_minutes} == {
            k: v for k, v in expected.items() if k not in old_minutes
        }
