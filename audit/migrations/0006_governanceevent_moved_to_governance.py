# The governance log moved to the kernel (console.governance, app label "governance"): the
# audit app forgets the model; its table, audit_governanceevent, stays where it is and is
# taken over by governance 0001. No row moves.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0005_record_export"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="GovernanceEvent")],
            database_operations=[],
        ),
    ]
