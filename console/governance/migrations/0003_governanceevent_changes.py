# The structured field-by-field change of a configuration event; null for other actions and
# for events written before this column existed (they render their before/after as before).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0002_governanceevent_request_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="governanceevent",
            name="changes",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
