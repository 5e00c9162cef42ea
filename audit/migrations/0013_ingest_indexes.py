"""Drop the BRIN index on records' timestamp (created by 0003, PostgreSQL only).

Every query that can use it — the `since`/`until` range of search, export, the dashboard
aggregates — is served by the B-tree `record_ts_id` (timestamp, id), whose leading column
is the same timestamp, or by `record_agent_ts`/`record_outcome_ts` with a filter; the
planner had no query left for BRIN, and ingest paid for it on every row (issue 14)."""

from django.db import migrations

FORWARD = ["DROP INDEX IF EXISTS record_ts_brin"]
BACKWARD = [
    "CREATE INDEX IF NOT EXISTS record_ts_brin ON audit_interceptionrecord USING brin (timestamp)"
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0012_saved_views_tool_prefix")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False)]
