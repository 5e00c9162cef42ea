# The governance log, moved here from the audit app: the model takes over the existing table
# audit_governanceevent (db_table), so no row moves and the database is not changed.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _move_content_type(apps, schema_editor, source="audit", target="governance"):
    """Keep the model's content type (and so its permissions) under the new app label."""
    content_type = apps.get_model("contenttypes", "ContentType")
    rows = content_type.objects.using(schema_editor.connection.alias)
    if rows.filter(app_label=target, model="governanceevent").exists():
        return
    rows.filter(app_label=source, model="governanceevent").update(app_label=target)


def _move_content_type_back(apps, schema_editor):
    _move_content_type(apps, schema_editor, source="governance", target="audit")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("agents", "0001_initial"),
        ("audit", "0006_governanceevent_moved_to_governance"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="GovernanceEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("action", models.CharField(db_index=True, max_length=64)),
                        ("actor_label", models.CharField(max_length=150)),
                        ("agent_slug", models.CharField(blank=True, db_index=True, max_length=64)),
                        ("object_type", models.CharField(blank=True, max_length=64)),
                        ("object_id", models.CharField(blank=True, max_length=64)),
                        ("summary", models.CharField(max_length=500)),
                        ("before", models.JSONField(blank=True, null=True)),
                        ("after", models.JSONField(blank=True, null=True)),
                        (
                            "actor",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "agent",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="agents.agent",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "audit_governanceevent",
                        "ordering": ["-at", "-id"],
                        "indexes": [models.Index(fields=["at", "id"], name="govevent_at_id")],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_move_content_type, _move_content_type_back),
    ]
