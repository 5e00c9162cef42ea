"""Fault run `approvals-postgres` (see bench/faults/run.py); `--ci` for the shortened form.

PYTHONPATH=. .venv/bin/python bench/faults/approvals_postgres.py [--ci]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.faults.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(asyncio.run(main(["approvals-postgres", *sys.argv[1:]])))
