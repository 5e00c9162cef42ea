"""Monthly range partitions of the record table (PostgreSQL; see docs/audit-storage.md).

On PostgreSQL `audit_interceptionrecord` is `PARTITION BY RANGE (timestamp)` (migration
0008): one partition per UTC calendar month, `audit_interceptionrecord_pYYYY_MM`, holding
[first instant of the month, first instant of the next), and a DEFAULT partition,
`audit_interceptionrecord_default`, for any instant no monthly partition covers (a record
may carry any timestamp in the years 1-9999, so ingest never fails for want of a
partition). `partitions_ensure` (beat, daily) creates the current month and the next
CONSOLE_RECORD_PARTITIONS_AHEAD months; a month whose rows already sit in the DEFAULT
partition is created by moving those rows into it first. `records_purge` drops whole
monthly partitions (audit.retention). The embedded SQLite default keeps a plain table:
every function here is for PostgreSQL only.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from console import embedded

if TYPE_CHECKING:
    from audit.record_rows import ValidItem

PARENT = "audit_interceptionrecord"
DEFAULT_PARTITION = f"{PARENT}_default"
_NAME = re.compile(rf"^{PARENT}_p(\d{{4}})_(\d{{2}})$")
# DDL on the record table waits at most this long for its lock, then gives up until the
# next run: a statement queued for an ACCESS EXCLUSIVE lock holds up every later query of
# the table (ingest, search) behind a long export.
DDL_LOCK_TIMEOUT_MS = 3000


@dataclass(frozen=True)
class Partition:
    name: str
    lower: dt.datetime
    upper: dt.datetime


def month_floor(instant: dt.datetime) -> dt.datetime:
    """The first instant (UTC) of the calendar month holding `instant`."""
    utc = instant.astimezone(dt.UTC)
    return dt.datetime(utc.year, utc.month, 1, tzinfo=dt.UTC)


def add_months(month: dt.datetime, count: int) -> dt.datetime:
    index = month.year * 12 + month.month - 1 + count
    return dt.datetime(index // 12, index % 12 + 1, 1, tzinfo=dt.UTC)


def partition_for(month: dt.datetime) -> Partition:
    lower = month_floor(month)
    return Partition(f"{PARENT}_p{lower.year:04d}_{lower.month:02d}", lower, add_months(lower, 1))


def is_partitioned(cursor: Any = None) -> bool:
    """Whether the record table is partitioned here (PostgreSQL after migration 0008)."""
    if not embedded.database_is_postgresql():
        return False
    if cursor is None:
        with connection.cursor() as own:
            return is_partitioned(own)
    cursor.execute("SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(%s)", [PARENT])
    return cursor.fetchone() is not None


def monthly_partitions(cursor: Any) -> list[Partition]:
    """The monthly partitions attached now, oldest first (the DEFAULT one is not listed)."""
    cursor.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(%s)",
        [PARENT],
    )
    found = []
    for (name,) in cursor.fetchall():
        match = _NAME.match(name)
        if match:
            found.append(partition_for(dt.datetime(int(match[1]), int(match[2]), 1, tzinfo=dt.UTC)))
    return sorted(found, key=lambda partition: partition.lower)


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def create_partition(cursor: Any, month: dt.datetime) -> Partition:
    """Create the month's partition. Rows of that month already in the DEFAULT partition
    (PostgreSQL refuses a new partition while the default one holds rows of its range) are
    moved into it in the same transaction: the new table is filled, then attached."""
    partition = partition_for(month)
    bounds = [partition.lower, partition.upper]
    cursor.execute(
        f"SELECT EXISTS (SELECT 1 FROM {_quote(DEFAULT_PARTITION)} "  # noqa: S608 - fixed names
        'WHERE "timestamp" >= %s AND "timestamp" < %s)',
        bounds,
    )
    stranded = cursor.fetchone()[0]
    table, parent = _quote(partition.name), _quote(PARENT)
    if not stranded:
        cursor.execute(
            f"CREATE TABLE {table} PARTITION OF {parent} FOR VALUES FROM (%s) TO (%s)", bounds
        )
        return partition
    cursor.execute(f"CREATE TABLE {table} (LIKE {parent} INCLUDING DEFAULTS)")
    cursor.execute(
        f"WITH moved AS (DELETE FROM {_quote(DEFAULT_PARTITION)} "  # noqa: S608 - fixed names
        'WHERE "timestamp" >= %s AND "timestamp" < %s RETURNING *) '
        f"INSERT INTO {table} SELECT * FROM moved",
        bounds,
    )
    cursor.execute(
        f"ALTER TABLE {parent} ATTACH PARTITION {table} FOR VALUES FROM (%s) TO (%s)", bounds
    )
    return partition


def partitions_ensure(months_ahead: int | None = None, now: dt.datetime | None = None) -> list[str]:
    """Create the monthly partitions of the current month and the next `months_ahead`
    (CONSOLE_RECORD_PARTITIONS_AHEAD) that are missing; returns the names created. Past
    months are never re-created (retention dropped them; their late records go to the
    DEFAULT partition)."""
    if not is_partitioned():
        return []
    ahead = settings.CONSOLE_RECORD_PARTITIONS_AHEAD if months_ahead is None else months_ahead
    first = month_floor(now or timezone.now())
    created: list[str] = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [str(DDL_LOCK_TIMEOUT_MS)])
        existing = {partition.name for partition in monthly_partitions(cursor)}
        for offset in range(ahead + 1):
            month = add_months(first, offset)
            if partition_for(month).name not in existing:
                created.append(create_partition(cursor, month).name)
    return created


def partition_stats(cursor: Any, partition: Partition) -> list[tuple[int, int, int, int, int]]:
    """Per agent with rows in the partition: (agent_id, rows, sealed rows, lowest and
    highest chain_seq of its sealed rows)."""
    cursor.execute(
        "SELECT r.agent_id, count(*), count(s.record_id), "  # noqa: S608 - fixed names
        "coalesce(min(s.chain_seq), 0), coalesce(max(s.chain_seq), 0) "
        f"FROM {_quote(partition.name)} r "
        "LEFT JOIN audit_recordseal s ON s.record_id = r.id AND s.agent_id = r.agent_id "
        "GROUP BY r.agent_id ORDER BY r.agent_id"
    )
    return [tuple(row) for row in cursor.fetchall()]


def partition_drop(cursor: Any, partition: Partition) -> None:
    parent, table = _quote(PARENT), _quote(partition.name)
    cursor.execute(f"ALTER TABLE {parent} DETACH PARTITION {table}")
    cursor.execute(f"DROP TABLE {table}")


# Advisory-lock namespace of ingest's look-up of records without a timestamp ("rec\0").
_UNTIMED_LOCK = 0x72656300 << 32


def untimed_replays_dropped(agent_id: int, items: list[ValidItem]) -> list[ValidItem]:
    """`items` without those that have no timestamp of their own and whose (session_id,
    sequence) the agent already stored. Such a record is stored with its received time,
    so a replay of it would carry another partition key and slip past the unique index
    (which holds the timestamp); it is looked up instead, in every partition. One ingest
    of the agent's untimed records at a time (a transaction-level advisory lock), so two
    concurrent deliveries of one record cannot both miss each other. Records with a
    timestamp (all the SDK writes) skip this: a replay carries the same timestamp and the
    unique index catches it."""
    keys = [item.key for item in items if item.timestamp is None]
    if not keys:
        return items
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s)", [_UNTIMED_LOCK | (agent_id & 0xFFFFFFFF)]
        )
        cursor.execute(
            "SELECT r.session_id, r.sequence "  # noqa: S608 - fixed names
            f"FROM unnest(%s::text[], %s::bigint[]) AS k(session_id, sequence) "
            f"JOIN {PARENT} r ON r.session_id = k.session_id AND r.sequence = k.sequence "
            "AND r.agent_id = %s",
            [[key[0] for key in keys], [key[1] for key in keys], agent_id],
        )
        known = set(cursor.fetchall())
    if not known:
        return items
    return [item for item in items if item.timestamp is not None or item.key not in known]
