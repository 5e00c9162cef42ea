#!/usr/bin/env bash
# Runs every benchmark once, in sequence, printing each one's figures. `make bench` calls it
# with DATABASE_URL / REDIS_URL set to the local PostgreSQL and Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=.venv/bin/python
for script in hook_overhead_middleware hook_overhead_sandbox approval_latency inbox asgi_hops runtime_hooks ingest export search; do
  if [ -f "bench/$script.py" ]; then
    echo "=== bench/$script.py"
    "$PY" "bench/$script.py"
  fi
done
