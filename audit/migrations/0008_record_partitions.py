"""PostgreSQL: the record table becomes PARTITION BY RANGE (timestamp), one partition per
month plus a DEFAULT one (audit.partitions, docs/audit-storage.md).

- The idempotency key gains `timestamp` (a unique index on a partitioned table must hold
  the partition key): (session_id, sequence, agent_id, timestamp). Ingest keeps replays
  exact (audit.services): a replayed record carries its own timestamp, and records
  without one are looked up by (session_id, sequence, agent_id) before they are written.
- The primary key becomes (id, timestamp) for the same reason; `id` stays the model's pk
  and keeps its sequence (ids go on where they were).
- RecordSeal.record loses its database-level foreign key (a foreign key must reference a
  unique key, and `id` alone is no longer one). The seal still names its record by id;
  the sealer only seals ids it has just read, retention removes seals and records in the
  same transaction, and `audit_verify` reports a seal without its record as "deleted".

On SQLite (the embedded default) the table stays plain; only the two constraint changes
apply there. The conversion copies every row (minutes at tens of millions: a deploy with
a maintenance window) and recreates every index of the old table on the parent, so each
partition gets its local copy.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

PARENT = "audit_interceptionrecord"
OLD = f"{PARENT}_old"


def _table_shape(cursor, table):
    """Index definitions (but the primary key), foreign-key definitions and the id
    sequence's position of `table`."""
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename = %s AND indexname <> %s",
        [table, f"{PARENT}_pkey"],
    )
    indexes = [definition.replace(" ON ONLY ", " ON ") for _name, definition in cursor.fetchall()]
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = to_regclass(%s) AND contype = 'f'",
        [table],
    )
    foreign_keys = cursor.fetchall()
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    sequence = cursor.fetchone()[0]
    cursor.execute(f"SELECT last_value, is_called FROM {sequence}")  # noqa: S608
    position = cursor.fetchone()
    return indexes, foreign_keys, sequence, position


def _rebuild(cursor, *, partitioned, months):
    indexes, foreign_keys, sequence, (last_value, is_called) = _table_shape(cursor, PARENT)
    cursor.execute(f"ALTER TABLE {PARENT} RENAME TO {OLD}")
    cursor.execute(f"ALTER SEQUENCE {sequence} RENAME TO {OLD}_id_seq")
    layout = ' PARTITION BY RANGE ("timestamp")' if partitioned else ""
    cursor.execute(
        f"CREATE TABLE {PARENT} (LIKE {OLD} INCLUDING DEFAULTS INCLUDING IDENTITY "
        f"INCLUDING STORAGE INCLUDING COMPRESSION){layout}"
    )
    if partitioned:
        from audit.partitions import DEFAULT_PARTITION, create_partition

        cursor.execute(f"CREATE TABLE {DEFAULT_PARTITION} PARTITION OF {PARENT} DEFAULT")
        for month in months:
            create_partition(cursor, month)
    cursor.execute(f"INSERT INTO {PARENT} SELECT * FROM {OLD}")  # noqa: S608
    cursor.execute(
        "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s, %s)",
        [PARENT, last_value, is_called],
    )
    cursor.execute(f"DROP TABLE {OLD}")
    key = 'id, "timestamp"' if partitioned else "id"
    cursor.execute(f'ALTER TABLE {PARENT} ADD CONSTRAINT "{PARENT}_pkey" PRIMARY KEY ({key})')
    for definition in indexes:
        cursor.execute(definition)
    for name, definition in foreign_keys:
        cursor.execute(f'ALTER TABLE {PARENT} ADD CONSTRAINT "{name}" {definition}')


def _months_to_create(cursor):
    """Monthly partitions the migration creates: from the month of the oldest record still
    within retention (one month of slack) through CONSOLE_RECORD_PARTITIONS_AHEAD months
    ahead. Rows outside go to the DEFAULT partition."""
    import datetime as dt

    from django.utils import timezone

    from audit.partitions import add_months, month_floor

    now = month_floor(timezone.now())
    floor = add_months(
        month_floor(timezone.now() - dt.timedelta(days=settings.CONSOLE_RECORD_RETENTION_DAYS)), -1
    )
    cursor.execute(f'SELECT min("timestamp") FROM {PARENT}')  # noqa: S608
    oldest = cursor.fetchone()[0]
    first = now if oldest is None else min(now, max(floor, month_floor(oldest)))
    months = []
    month = first
    while month <= add_months(now, settings.CONSOLE_RECORD_PARTITIONS_AHEAD):
        months.append(month)
        month = add_months(month, 1)
    return months


def to_partitioned(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        _rebuild(cursor, partitioned=True, months=_months_to_create(cursor))


def to_plain(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        _rebuild(cursor, partitioned=False, months=[])


class Migration(migrations.Migration):
    dependencies = [("audit", "0007_chain_verification")]

    operations = [
        migrations.AlterField(
            model_name="recordseal",
            name="record",
            field=models.OneToOneField(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                primary_key=True,
                related_name="seal",
                serialize=False,
                to="audit.interceptionrecord",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="interceptionrecord", name="record_unique_session_seq"
        ),
        migrations.RunPython(to_partitioned, to_plain, elidable=False),
        migrations.AddConstraint(
            model_name="interceptionrecord",
            constraint=models.UniqueConstraint(
                fields=("session_id", "sequence", "agent", "timestamp"),
                name="record_unique_key",
            ),
        ),
    ]
