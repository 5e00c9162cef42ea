# The X-Request-ID of the request (websocket, task) that made the change; null for periodic
# work and for events written before this column existed.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="governanceevent",
            name="request_id",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
    ]
