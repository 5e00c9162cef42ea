"""Behind PgBouncer (transaction pooling), does the console's own psycopg pool still pay?

Starts a private PgBouncer (tests/e2e/scaleout.py: transaction mode, 4 server connections)
in front of the migrated database of DATABASE_URL and two daphne consoles through it with
DATABASE_TRANSACTION_POOLING=1: one with the pool (DATABASE_POOL_MAX=64), one without
(DATABASE_POOL_MAX=0: a new PgBouncer client connection per request). Sends sequential GETs
to both in alternating rounds (so load drifts hit both alike) and prints the median time
per request of each and their ratio.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/console .venv/bin/python bench/pgbouncer_pool.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.db import connection  # noqa: E402

from agents import services as agent_services  # noqa: E402
from agents.models import Agent  # noqa: E402
from console import services as console_services  # noqa: E402
from tests.e2e.live import LiveConsole, start_console, stop_console  # noqa: E402
from tests.e2e.scaleout import PgBouncer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--requests", type=int, default=50, help="per console per round")
    options = parser.parse_args()
    auditor = console_services.user_set_role(actor=None, username="bench-auditor", role="auditor")
    auditor_token = console_services.api_token_issue(actor=None, user=auditor, name="bench")
    agent = Agent.objects.filter(slug="bench-pool").first() or agent_services.agent_create(
        actor=None, slug="bench-pool"
    )
    agent_token = agent_services.agent_token_issue(actor=None, agent=agent, name="bench")
    paths = {
        "/api/v1/declaration": agent_token.plaintext,
        "/api/v1/records?limit=20": auditor_token.plaintext,
    }
    db = connection.settings_dict
    bouncer = PgBouncer(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432), pool_size=4)
    bouncer.start(users=(db["USER"] or "postgres",))
    logs = Path(tempfile.mkdtemp(prefix="bench-pgbouncer-"))
    consoles: dict[str, LiveConsole] = {}
    try:
        for name, pool in (("pool 64", "64"), ("pool off", "0")):
            consoles[name] = start_console(
                logs / f"{pool}.log",
                timeout=90,
                database_url=bouncer.url(db["NAME"], db["USER"] or "postgres"),
                extra_env={
                    "DATABASE_TRANSACTION_POOLING": "1",
                    "DATABASE_POOL_MAX": pool,
                    "LOG_LEVEL": "WARNING",
                },
            )
        with httpx.Client(timeout=30) as client:
            for path, token in paths.items():
                headers = {"Authorization": f"Bearer {token}"}
                per_request: dict[str, list[float]] = {name: [] for name in consoles}
                for round_ in range(options.rounds + 1):
                    for name, console in consoles.items():
                        started = time.perf_counter()
                        for _ in range(options.requests):
                            answer = client.get(f"{console.url}{path}", headers=headers)
                            assert answer.status_code == 200, answer.text
                        if round_:  # the first round warms up
                            seconds = time.perf_counter() - started
                            per_request[name].append(seconds / options.requests * 1000)
                medians = {name: statistics.median(ms) for name, ms in per_request.items()}
                shown = ", ".join(f"{name} {ms:.2f} ms" for name, ms in medians.items())
                ratio = medians["pool off"] / medians["pool 64"]
                print(f"GET {path}: median per request {shown}; off/on {ratio:.2f}")
        print(f"load average: {os.getloadavg()}")
    finally:
        for console in consoles.values():
            stop_console(console)
        bouncer.stop()


if __name__ == "__main__":
    main()
