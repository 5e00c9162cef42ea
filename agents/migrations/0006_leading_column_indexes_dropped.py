"""Indexes on a leading column of another index dropped (agents.models): agent alone on
custom agents, hooks, configuration revisions and runtime sessions, hook alone on samples.

Only the indexes: Django's AlterField would also drop and re-add each foreign key, which on
PostgreSQL re-validates every row under a lock. The names are the ones Django gave them, the
same on PostgreSQL and SQLite."""

import django.db.models.deletion
from django.db import migrations, models

# (index, table, column)
DROPPED = [
    ("agents_customagent_agent_id_5d6333d6", "agents_customagent", "agent_id"),
    ("agents_hook_agent_id_69982ec8", "agents_hook", "agent_id"),
    ("agents_configrevision_agent_id_27b4f1ea", "agents_configrevision", "agent_id"),
    ("agents_runtimesession_agent_id_16fdfc4d", "agents_runtimesession", "agent_id"),
    ("agents_hooksample_hook_id_96012b16", "agents_hooksample", "hook_id"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0005_hook_record_reason"),
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
                    model_name="customagent",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="custom_agents",
                        to="agents.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="hook",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="hooks",
                        to="agents.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="configrevision",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="revisions",
                        to="agents.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="runtimesession",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="runtime_sessions",
                        to="agents.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="hooksample",
                    name="hook",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="samples",
                        to="agents.hook",
                    ),
                ),
            ],
        )
    ]
