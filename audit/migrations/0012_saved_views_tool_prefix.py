"""The explorer's saved views, and on PostgreSQL the index of the `tool_prefix` filter:
`lower(tool_name) text_pattern_ops` serves `lower(tool_name) LIKE 'pre%'` (any database
collation), with `timestamp` second so a time-bounded prefix search filters in the index.
Skipped on other databases, like 0003's indexes."""

import django.db.models.deletion
import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models

FORWARD = [
    "CREATE INDEX IF NOT EXISTS record_tool_lower ON audit_interceptionrecord "
    "(lower(tool_name) text_pattern_ops, timestamp)",
]
BACKWARD = ["DROP INDEX IF EXISTS record_tool_lower"]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0011_rollup_agent_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="SavedView",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=80)),
                ("query", models.CharField(blank=True, max_length=2000)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "owner",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["name", "id"],
                "constraints": [
                    models.UniqueConstraint(
                        models.F("owner"),
                        django.db.models.functions.text.Lower("name"),
                        name="savedview_unique_owner_name",
                    )
                ],
            },
        ),
        migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False),
    ]
