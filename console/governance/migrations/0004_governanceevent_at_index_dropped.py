"""The governance log's index on `at` alone dropped: govevent_at_id, (at, id), leads with it
(console.governance.models). Only the index; the name is the one Django gave it."""

from django.db import migrations, models

INDEX = "audit_governanceevent_at_4119df44"


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0003_governanceevent_changes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=f'CREATE INDEX "{INDEX}" ON "audit_governanceevent" ("at")',
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="governanceevent",
                    name="at",
                    field=models.DateTimeField(auto_now_add=True),
                )
            ],
        )
    ]
