"""`manage.py audit_rollup_rebuild`: recount the dashboard's rollups from the records.

The rollups are kept current by the sealer and by retention (audit.rollups); this recount
is for records written outside them (e.g. `audit_seed_records`) or after a restore. The
sealers and retention wait while it runs (it locks the rollup tables).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from audit.rollups import rollups_rebuild


class Command(BaseCommand):
    help = "Recount the audit dashboard's rollup tables from the stored records."

    def handle(self, *args: Any, **options: Any) -> None:
        began = time.perf_counter()
        counted = rollups_rebuild()
        elapsed = time.perf_counter() - began
        self.stdout.write(f"rollups rebuilt: {counted} records counted in {elapsed:.1f}s")
