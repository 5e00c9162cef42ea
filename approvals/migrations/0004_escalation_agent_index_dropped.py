"""Indexes on a leading column of another index dropped (approvals.models): the index on
escalation.agent alone, on escalationvote.escalation and on reviewerscope.user.

Only the indexes: Django's AlterField would also drop and re-add each foreign key, which on
PostgreSQL re-validates every row under a lock. The names are the ones Django gave them, the
same on PostgreSQL and SQLite."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# (index, table, column)
DROPPED = [
    ("approvals_escalation_agent_id_b4fe1dac", "approvals_escalation", "agent_id"),
    (
        "approvals_escalationvote_escalation_id_f8bbdff5",
        "approvals_escalationvote",
        "escalation_id",
    ),
    ("approvals_reviewerscope_user_id_a4a0510e", "approvals_reviewerscope", "user_id"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0005_hook_record_reason"),
        ("approvals", "0003_slack_identity"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("{column}")',
                )
                for index, table, column in DROPPED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="escalation",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="escalations",
                        to="agents.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="escalationvote",
                    name="escalation",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="votes",
                        to="approvals.escalation",
                    ),
                ),
                migrations.AlterField(
                    model_name="reviewerscope",
                    name="user",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reviewer_scopes",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        )
    ]
