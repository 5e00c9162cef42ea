"""PostgreSQL-only indexes the model can't declare portably: GIN on hook_ids (a text[]
there, JSON text on SQLite) and BRIN on timestamp. Skipped on other databases."""

from django.db import migrations

FORWARD = [
    "CREATE INDEX IF NOT EXISTS record_hook_ids_gin ON audit_interceptionrecord USING gin (hook_ids)",
    "CREATE INDEX IF NOT EXISTS record_ts_brin ON audit_interceptionrecord USING brin (timestamp)",
]
BACKWARD = [
    "DROP INDEX IF EXISTS record_hook_ids_gin",
    "DROP INDEX IF EXISTS record_ts_brin",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_interception_records")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False)]
