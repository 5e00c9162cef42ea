"""Hooks get a name (unique per scope, case-insensitively), a description and a mode.
Existing hooks are named from their event and matcher, numbered where that repeats."""

from django.db import migrations, models
from django.db.models import Q
from django.db.models.functions import Lower

from agents.hook_names import derived_name, unique_name


def name_existing_hooks(apps, schema_editor):
    Hook = apps.get_model("agents", "Hook")
    taken: dict[tuple[int, int | None], set[str]] = {}
    for hook in Hook.objects.order_by("agent_id", "custom_agent_id", "event", "position", "id"):
        scope = taken.setdefault((hook.agent_id, hook.custom_agent_id), set())
        hook.name = unique_name(derived_name(hook.event, hook.definition or {}), scope)
        hook.save(update_fields=["name"])


class Migration(migrations.Migration):
    dependencies = [("agents", "0002_runtime_session")]

    operations = [
        migrations.AddField(
            model_name="hook",
            name="name",
            field=models.CharField(default="", max_length=80),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="hook",
            name="description",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="hook",
            name="mode",
            field=models.CharField(
                choices=[("enforce", "Enforce"), ("shadow", "Shadow")],
                default="enforce",
                max_length=16,
            ),
        ),
        migrations.RunPython(name_existing_hooks, migrations.RunPython.noop, elidable=False),
        migrations.AddConstraint(
            model_name="hook",
            constraint=models.UniqueConstraint(
                Lower("name"),
                "agent",
                condition=Q(custom_agent__isnull=True),
                name="hook_unique_name_agent_level",
            ),
        ),
        migrations.AddConstraint(
            model_name="hook",
            constraint=models.UniqueConstraint(
                Lower("name"),
                "custom_agent",
                condition=Q(custom_agent__isnull=False),
                name="hook_unique_name_custom_agent",
            ),
        ),
    ]
