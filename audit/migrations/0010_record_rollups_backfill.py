"""Count the records already stored into the new rollup tables (audit.rollups).

Runs the current `rollups_rebuild` (raw SQL over the record table, so it does not depend on
historical models); `manage.py audit_rollup_rebuild` runs the same recount on demand.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


def backfill(apps: Any, schema_editor: Any) -> None:
    from audit.rollups import rollups_rebuild

    rollups_rebuild()


class Migration(migrations.Migration):
    atomic = True
    dependencies = [("audit", "0009_record_rollups")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True)]
