"""Export memory stays flat: 200k records stream with a bounded Python heap."""

from __future__ import annotations

import tracemalloc

import pytest
from django.core.management import call_command

from audit.models import InterceptionRecord

pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]
ROWS = 200_000
BOUND = 50 * 1024 * 1024


@pytest.fixture
def seeded(db) -> None:
    call_command("audit_seed_records", count=ROWS, agents="bulk-agent", days=10, verbosity=0)
    assert InterceptionRecord.objects.count() == ROWS


def _stream_peak(chunks) -> tuple[int, int, int]:
    """(peak traced bytes, bytes streamed, data lines) while consuming `chunks`."""
    tracemalloc.start()
    try:
        total = lines = 0
        for chunk in chunks:
            total += len(chunk)
            lines += chunk.count(b"\n")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, total, lines


def test_csv_export_of_200k_rows_through_the_endpoint_keeps_memory_flat(auditor_client, seeded):
    response = auditor_client.get("/api/v1/records/export", {"format": "csv"})
    assert response.status_code == 200
    peak, total, lines = _stream_peak(response.streaming_content)
    assert lines == ROWS + 1  # the column header, then one line per record
    assert total > 100 * 1024 * 1024  # the export itself is far larger than the bound
    print(f"export of {ROWS} rows: {total / 2**20:.0f} MiB streamed, peak {peak / 2**20:.2f} MiB")
    assert peak < BOUND, f"peak {peak / 2**20:.1f} MiB"
