"""Records lose their database-level foreign key to their agent (issue 14).

On PostgreSQL that key was a deferred check per stored row at commit (a trigger and a
`SELECT … FOR KEY SHARE` of the agent each): about 3 µs of the server's ~25 µs per ingested
record (docs/benchmarks.md, seventeenth pass). What it guaranteed is kept another way:

- each ingested batch still writes one row with a foreign key to the agent, its seal-queue
  row (`RecordSealPending`), in the same transaction: that one check per batch, at commit,
  waits for a concurrent delete of the agent and then fails the whole batch;
- on PostgreSQL a trigger refuses deleting an agent that still has records (SQLSTATE
  23503, what the key raised). Django's `PROTECT` refuses such a delete first, on every
  database.
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = [
    """
    CREATE FUNCTION audit_agent_delete_refused() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM audit_interceptionrecord WHERE agent_id = OLD.id) THEN
            RAISE EXCEPTION 'agent % still has interception records', OLD.id
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN OLD;
    END $$
    """,
    "CREATE TRIGGER audit_agent_delete_refused BEFORE DELETE ON agents_agent "
    "FOR EACH ROW EXECUTE FUNCTION audit_agent_delete_refused()",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_agent_delete_refused ON agents_agent",
    "DROP FUNCTION IF EXISTS audit_agent_delete_refused()",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0006_leading_column_indexes_dropped"),
        ("audit", "0014_seal_agent_no_db_constraint"),
    ]

    operations = [
        migrations.AlterField(
            model_name="interceptionrecord",
            name="agent",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="interception_records",
                to="agents.agent",
            ),
        ),
        migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False),
    ]
