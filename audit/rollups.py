"""Record rollups: the counts the audit dashboard reads instead of the records.

Two tables (audit.models): `RecordRollup` counts records per time bucket × agent ×
outcome × mode (and, of them, agent_startup records = sessions started);
`RecordProblemRollup` counts the blocking/failing records (denied, rejected, expired,
host_error) per bucket × agent × outcome × (deciding hook, reason, verdict message).
Every record is counted at three grains: minute, hour and day buckets (UTC). Minute rows
serve only the last-hour view and are pruned after MINUTE_ROWS_KEPT by retention.

Maintenance, each exact and in the transaction of the change it counts:

- the sealer (`audit.chain.chain_seal`) adds the records it seals (`records_counted`; on
  PostgreSQL it folds the rows it reads for the seals by minute itself, `minutes_counted`):
  a record is sealed exactly once, so a replayed or concurrent duplicate, which ingest
  never stores, is never counted either; the sealer reads those records anyway, and it
  holds its agent's ChainHead lock, so two upserts never race for the same rollup
  row (every key includes the agent): no lock waits, no deadlocks, no cost on ingest;
- retention (`audit.services._purge_agent`) subtracts the records it deletes
  (`records_removed`, before the DELETE, same transaction), and a partition drop calls
  `rollups_drop_range` for the dropped time range;
- `rollups_rebuild` (command `audit_rollup_rebuild`, and migration 0009) recounts.

Invariant: the rollups count every record that is not waiting in RecordSealPending.
The dashboard adds those waiting records (a few batches at most while the sealer keeps up)
by id in the same snapshot (`pending_rows`), so its numbers equal the search's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, Sum
from django.db.models.fields.json import KT

from audit.models import (
    InterceptionPoint,
    InterceptionRecord,
    Outcome,
    RecordProblemRollup,
    RecordRollup,
    RecordSealPending,
    RollupGrain,
)
from console import embedded

PROBLEM_OUTCOMES = (Outcome.DENIED, Outcome.REJECTED, Outcome.EXPIRED, Outcome.HOST_ERROR)
GRAINS = (RollupGrain.MINUTE, RollupGrain.HOUR, RollupGrain.DAY)
MINUTE_ROWS_KEPT = dt.timedelta(days=2)
# The record columns a rollup needs (plus the verdict message, read from raw).
ROLLUP_FIELDS = (
    "agent_id",
    "timestamp",
    "outcome",
    "mode",
    "interception_point",
    "decided_hook",
    "reason",
)
PENDING_LIMIT = 5000  # waiting records the dashboard adds by id
PENDING_BATCHES = 50
_UPSERT_CHUNK = 500

Key = tuple[int, dt.datetime, int, str, str]
ProblemKey = tuple[int, dt.datetime, int, str, str]


def bucket_start(value: dt.datetime, grain: int) -> dt.datetime:
    """The start (UTC) of the grain's bucket holding `value`."""
    value = value.astimezone(dt.UTC).replace(second=0, microsecond=0)
    if grain >= RollupGrain.HOUR:
        value = value.replace(minute=0)
    if grain >= RollupGrain.DAY:
        value = value.replace(hour=0)
    return value


def bucket_end(start: dt.datetime, grain: int) -> dt.datetime:
    size = {RollupGrain.MINUTE: 60, RollupGrain.HOUR: 3600, RollupGrain.DAY: 86400}[
        RollupGrain(grain)
    ]
    return start + dt.timedelta(seconds=size)


def _ceil(value: dt.datetime, grain: int) -> dt.datetime:
    start = bucket_start(value, grain)
    return start if start == value else bucket_end(start, grain)


def verdict_message(row: Mapping[str, Any]) -> str:
    """The verdict message of a record's values: `message` when read with KT, else raw's."""
    if "message" in row:
        return str(row["message"] or "")
    verdict = (row.get("raw") or {}).get("verdict") or {}
    return str(verdict.get("message") or "")


def detail_key(hook: str, reason: str, message: str) -> str:
    """md5 of the three texts joined by U+001F (the rebuild's SQL computes the same)."""
    joined = f"{hook}\x1f{reason}\x1f{message}".encode()
    return hashlib.md5(joined, usedforsecurity=False).hexdigest()


MinuteKey = tuple[dt.datetime, int, str, str]  # minute, agent, outcome, mode
MinuteProblemKey = tuple[dt.datetime, int, str, str, str, str]  # … hook, reason, message


def aggregate(
    rows: Iterable[Mapping[str, Any]], grains: Iterable[int] = GRAINS
) -> tuple[dict[Key, list[int]], dict[ProblemKey, list[Any]]]:
    """Fold record values (ROLLUP_FIELDS + raw or message) into rollup increments:
    {key: [records, startups]} and {problem key: [records, hook, reason, message]}.
    Rows are folded once, by minute; the minute keys (far fewer) then roll up to each
    grain, so the per-record cost does not grow with the number of grains."""
    minutes: dict[MinuteKey, list[int]] = {}
    minute_problems: dict[MinuteProblemKey, int] = {}
    startup_point = InterceptionPoint.AGENT_STARTUP.value
    for row in rows:
        stamp: dt.datetime = row["timestamp"]
        if stamp.tzinfo is not dt.UTC:
            stamp = stamp.astimezone(dt.UTC)
        minute = stamp.replace(second=0, microsecond=0)
        outcome, agent = row["outcome"], row["agent_id"]
        counts = minutes.get((minute, agent, outcome, row["mode"]))
        if counts is None:
            counts = minutes[(minute, agent, outcome, row["mode"])] = [0, 0]
        counts[0] += 1
        if row["interception_point"] == startup_point:
            counts[1] += 1
        if outcome in PROBLEM_OUTCOMES:
            key = (
                minute,
                agent,
                outcome,
                row["decided_hook"] or "",
                row["reason"] or "",
                verdict_message(row),
            )
            minute_problems[key] = minute_problems.get(key, 0) + 1
    return by_grain(minutes, minute_problems, grains)


def by_grain(
    minutes: Mapping[MinuteKey, list[int]],
    minute_problems: Mapping[MinuteProblemKey, int],
    grains: Iterable[int] = GRAINS,
) -> tuple[dict[Key, list[int]], dict[ProblemKey, list[Any]]]:
    """Counts folded by minute (UTC, aware), rolled up to each grain: `aggregate`'s keys."""
    base: dict[Key, list[int]] = {}
    problems: dict[ProblemKey, list[Any]] = {}
    details: dict[tuple[str, str, str], str] = {}
    for grain in grains:
        for (minute, agent, outcome, mode), (n, startups) in minutes.items():
            bucket = minute if grain == RollupGrain.MINUTE else bucket_start(minute, grain)
            total = base.setdefault((grain, bucket, int(agent), str(outcome), str(mode)), [0, 0])
            total[0] += n
            total[1] += startups
        for (minute, agent, outcome, hook, reason, message), n in minute_problems.items():
            bucket = minute if grain == RollupGrain.MINUTE else bucket_start(minute, grain)
            texts = (str(hook), str(reason), message)
            detail = details.get(texts) or details.setdefault(texts, detail_key(*texts))
            entry = problems.setdefault(
                (grain, bucket, int(agent), str(outcome), detail), [0, *texts]
            )
            entry[0] += n
    return base, problems


def _upsert(
    table: str, columns: list[str], key: list[str], sums: list[str], rows: list[list[Any]]
) -> None:
    """INSERT … ON CONFLICT (key) DO UPDATE SET col = col + excluded.col, in chunks and in
    key order (the same order in every writer)."""
    if not rows:
        return
    marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    updates = ", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in sums)
    head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "  # noqa: S608 - fixed names
    tail = f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _UPSERT_CHUNK):
            chunk = rows[start : start + _UPSERT_CHUNK]
            params = [value for row in chunk for value in row]
            cursor.execute(head + ", ".join([marks] * len(chunk)) + tail, params)


def _apply(base: dict[Key, list[int]], problems: dict[ProblemKey, list[Any]], sign: int) -> None:
    adapt = connection.ops.adapt_datetimefield_value
    base_rows = [
        [grain, adapt(bucket), agent, outcome, mode, sign * n, sign * startups]
        for (grain, bucket, agent, outcome, mode), (n, startups) in sorted(base.items())
    ]
    problem_rows = [
        [grain, adapt(bucket), agent, outcome, detail, hook, reason, message, sign * n]
        for (grain, bucket, agent, outcome, detail), (n, hook, reason, message) in sorted(
            problems.items()
        )
    ]
    base_table, problem_table = RecordRollup._meta.db_table, RecordProblemRollup._meta.db_table
    _upsert(
        base_table,
        ["grain", "bucket", "agent_id", "outcome", "mode", "records", "startups"],
        ["grain", "bucket", "agent_id", "outcome", "mode"],
        ["records", "startups"],
        base_rows,
    )
    _upsert(
        problem_table,
        [
            "grain",
            "bucket",
            "agent_id",
            "outcome",
            "detail",
            "decided_hook",
            "reason",
            "message",
            "records",
        ],
        ["grain", "bucket", "agent_id", "outcome", "detail"],
        ["records"],
        problem_rows,
    )
    if sign < 0 and base:
        # Rows counted down to zero go (as do rows of already-pruned minute buckets).
        buckets = [key[1] for key in base]
        for model in (RecordRollup, RecordProblemRollup):
            model.objects.filter(
                grain__in=GRAINS, bucket__gte=min(buckets), bucket__lte=max(buckets), records__lte=0
            ).delete()


def records_counted(rows: Iterable[Mapping[str, Any]]) -> None:
    """Add records (their ROLLUP_FIELDS and raw) to the rollups: the sealer's one call, in
    its transaction, with the rows it just sealed."""
    base, problems = aggregate(rows)
    _apply(base, problems, 1)


def minutes_counted(
    minutes: Mapping[MinuteKey, list[int]], minute_problems: Mapping[MinuteProblemKey, int]
) -> None:
    """`records_counted` for records the caller already folded by minute as `aggregate`
    does (the PostgreSQL sealer, while it reads them for their seals)."""
    _apply(*by_grain(minutes, minute_problems), 1)


def _values(qs: Any) -> Any:
    return qs.order_by().values(*ROLLUP_FIELDS, message=KT("raw__verdict__message"))


def records_removed(ids: list[int]) -> None:
    """Subtract the records with these ids: retention's one call, in its transaction,
    before it deletes them."""
    if ids:
        base, problems = aggregate(_values(InterceptionRecord.objects.filter(pk__in=ids)))
        _apply(base, problems, -1)


def rollups_drop_range(since: dt.datetime, until: dt.datetime) -> None:
    """Forget every bucket in [since, until) (day-aligned bounds): for a retention that
    drops whole time partitions of records, in the transaction that drops them."""
    if (
        bucket_start(since, RollupGrain.DAY) != since
        or bucket_start(until, RollupGrain.DAY) != until
    ):
        raise ValueError("rollups_drop_range takes day-aligned bounds")
    for model in (RecordRollup, RecordProblemRollup):
        model.objects.filter(bucket__gte=since, bucket__lt=until).delete()


def minute_rows_prune(now: dt.datetime) -> int:
    """Drop minute rows older than MINUTE_ROWS_KEPT (hour and day rows still count them)."""
    horizon = now - MINUTE_ROWS_KEPT
    removed = 0
    for model in (RecordRollup, RecordProblemRollup):
        removed += model.objects.filter(grain=RollupGrain.MINUTE, bucket__lt=horizon).delete()[0]
    return removed


# --- rebuild ----------------------------------------------------------------------------------

# Records waiting for their seal are not counted (the sealer will count them).
_PG_NOT_WAITING = (
    "r.id NOT IN (SELECT DISTINCT (jsonb_array_elements_text(record_ids))::bigint "
    "FROM audit_recordsealpending)"
)
_PG_BASE = (
    "INSERT INTO audit_recordrollup (grain, bucket, agent_id, outcome, mode, records, startups) "
    "SELECT %s, date_trunc(%s, r.timestamp, 'UTC'), r.agent_id, r.outcome, r.mode, count(*), "
    "count(*) FILTER (WHERE r.interception_point = 'agent_startup') "
    "FROM audit_interceptionrecord r WHERE " + _PG_NOT_WAITING + " AND r.timestamp >= %s "
    "GROUP BY 2, 3, 4, 5"
)
_PG_PROBLEMS = (
    "INSERT INTO audit_recordproblemrollup "
    "(grain, bucket, agent_id, outcome, detail, decided_hook, reason, message, records) "
    "SELECT %s, date_trunc(%s, r.timestamp, 'UTC'), r.agent_id, r.outcome, "
    "md5(r.decided_hook || chr(31) || r.reason || chr(31) || "
    "coalesce(r.raw->'verdict'->>'message', '')), "
    "r.decided_hook, r.reason, coalesce(r.raw->'verdict'->>'message', ''), count(*) "
    "FROM audit_interceptionrecord r WHERE " + _PG_NOT_WAITING + " AND r.timestamp >= %s "
    "AND r.outcome IN ('denied', 'rejected', 'expired', 'host_error') "
    "GROUP BY 2, 3, 4, 6, 7, 8"
)
_PG_DAYS = (
    "INSERT INTO audit_recordrollup (grain, bucket, agent_id, outcome, mode, records, startups) "
    "SELECT %s, date_trunc('day', bucket, 'UTC'), agent_id, outcome, mode, sum(records), "
    "sum(startups) FROM audit_recordrollup WHERE grain = %s GROUP BY 2, 3, 4, 5"
)
_PG_PROBLEM_DAYS = (
    "INSERT INTO audit_recordproblemrollup "
    "(grain, bucket, agent_id, outcome, detail, decided_hook, reason, message, records) "
    "SELECT %s, date_trunc('day', bucket, 'UTC'), agent_id, outcome, detail, "
    "min(decided_hook), min(reason), min(message), sum(records) "
    "FROM audit_recordproblemrollup WHERE grain = %s GROUP BY 2, 3, 4, 5"
)


def rollups_rebuild(now: dt.datetime | None = None) -> int:
    """Recount both rollup tables from the records (every record not waiting for its
        seal). Sealers, retention and (on PostgreSQL, TRUNCATE) dashboards wait while it runs.
    Returns
        the number of records counted."""
    now = now or dt.datetime.now(dt.UTC)
    horizon = now - MINUTE_ROWS_KEPT
    epoch = dt.datetime(1, 1, 2, tzinfo=dt.UTC)
    with transaction.atomic():
        if embedded.database_is_postgresql():
            with connection.cursor() as cursor:
                cursor.execute(
                    "LOCK TABLE audit_recordrollup, audit_recordproblemrollup IN ACCESS EXCLUSIVE MODE"
                )
                # TRUNCATE, not DELETE: no dead rows left behind (readers wait too). Checking
                # deferred foreign keys first lets it run inside a caller's transaction.
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("TRUNCATE audit_recordrollup, audit_recordproblemrollup")
                minute, hour, day = RollupGrain.MINUTE, RollupGrain.HOUR, RollupGrain.DAY
                for grain, unit, since in ((hour, "hour", epoch), (minute, "minute", horizon)):
                    cursor.execute(_PG_BASE, [int(grain), unit, since])
                    cursor.execute(_PG_PROBLEMS, [int(grain), unit, since])
                cursor.execute(_PG_DAYS, [int(day), int(hour)])
                cursor.execute(_PG_PROBLEM_DAYS, [int(day), int(hour)])
                cursor.execute("ANALYZE audit_recordrollup, audit_recordproblemrollup")
        else:
            RecordRollup.objects.all().delete()
            RecordProblemRollup.objects.all().delete()
            waiting = {
                pk
                for ids in RecordSealPending.objects.values_list("record_ids", flat=True)
                for pk in ids
            }
            rows = (
                row
                for row in _values(InterceptionRecord.objects.exclude(pk__in=waiting)).iterator(
                    2000
                )
            )
            records_counted(rows)
            minute_rows_prune(now)
        counted = RecordRollup.objects.filter(grain=RollupGrain.DAY).aggregate(n=Sum("records"))[
            "n"
        ]
    return int(counted or 0)


# --- reads ------------------------------------------------------------------------------------


@contextlib.contextmanager
def one_snapshot() -> Iterator[None]:
    """Read the rollups and the pending records in one snapshot (REPEATABLE READ on
    PostgreSQL; SQLite transactions already are), so a seal committing between two reads
    neither drops nor doubles its records."""
    outer = connection.in_atomic_block
    with transaction.atomic():
        if not outer and embedded.database_is_postgresql():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _base(grain: int, since: dt.datetime, agent_id: int | None) -> Any:
    qs = RecordRollup.objects.filter(grain=grain, bucket__gte=since).order_by()
    return qs.filter(agent_id=agent_id) if agent_id is not None else qs


def chart_rows(grain: int, since: dt.datetime, agent_id: int | None) -> list[tuple[Any, ...]]:
    """(bucket, outcome, records) of the grain from `since` on (no upper bound, as the
    search's `since`), summed over agents and modes."""
    grouped = _base(grain, since, agent_id).values_list("bucket", "outcome")
    return list(grouped.annotate(n=Sum("records")))


def agent_rows(grain: int, since: dt.datetime, agent_id: int | None) -> list[tuple[Any, ...]]:
    """(agent_id, outcome, mode, records, startups) over the same rows, summed over time."""
    grouped = _base(grain, since, agent_id).values_list("agent_id", "outcome", "mode")
    return list(grouped.annotate(n=Sum("records"), s=Sum("startups")))


def _cover(since: dt.datetime) -> Q:
    """[since, ∞) as whole buckets, coarsest first: minutes up to the next hour, hours up
    to the next day, then days (since must be minute-aligned)."""
    hour, day = _ceil(since, RollupGrain.HOUR), _ceil(since, RollupGrain.DAY)
    return (
        Q(grain=RollupGrain.MINUTE, bucket__gte=since, bucket__lt=min(hour, day))
        | Q(grain=RollupGrain.HOUR, bucket__gte=hour, bucket__lt=day)
        | Q(grain=RollupGrain.DAY, bucket__gte=day)
    )


def problem_rows(since: dt.datetime, agent_id: int | None) -> list[dict[str, Any]]:
    """Problem counts from `since` on, summed per (outcome, hook, reason, message)."""
    qs = RecordProblemRollup.objects.filter(_cover(since))
    if agent_id is not None:
        qs = qs.filter(agent_id=agent_id)
    grouped = (
        qs.order_by()
        .values("outcome", "decided_hook", "reason", "message")
        .annotate(records=Sum("records"))
    )
    return [dict(row) for row in grouped]


def pending_rows(since: dt.datetime, agent_id: int | None) -> tuple[list[dict[str, Any]], int]:
    """Records stored but not yet sealed (so not yet in the rollups) from `since` on:
    their values, and how many waiting batches were left out (beyond PENDING_LIMIT
    records or PENDING_BATCHES batches: the sealer is behind, the page says so)."""
    ids: list[int] = []
    left_out = 0
    waiting = RecordSealPending.objects.order_by("id").values_list("record_ids", flat=True)
    for index, batch in enumerate(waiting[: PENDING_BATCHES + 1]):
        if index == PENDING_BATCHES or left_out or len(ids) + len(batch) > PENDING_LIMIT:
            left_out += 1
        else:
            ids += batch
    if not ids:
        return [], left_out
    qs = InterceptionRecord.objects.filter(pk__in=ids, timestamp__gte=since)
    if agent_id is not None:
        qs = qs.filter(agent_id=agent_id)
    return list(_values(qs)), left_out
