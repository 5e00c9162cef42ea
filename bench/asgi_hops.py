"""Per-request cost of the ASGI handler: the console's (`console.asgi_handler`: one thread hop
per request to a sync view) against Django's own (`bench/stock_asgi.py`: two hops per
middleware), on two real daphne processes of the same tree, same database, same run.

    .venv/bin/python bench/asgi_hops.py [--requests 300]

One sequential client alternates between the two servers request by request, so both see
the same machine load: `GET /healthz` (one SELECT), `GET /accounts/login/` (a page with a
form: session, CSRF, templates) and `POST /api/v1/records` (an agent's batch of 100 records,
a new session each time). Prints p50/p95 per server and the ratio console/stock.
"""

from __future__ import annotations

import argparse
import time

from audit_common import bench_agent, free_ports, median_p95, setup_django, start_daphne, stop
from ingest import make_bodies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    setup_django()
    import httpx

    _, token = bench_agent("bench-asgi-hops")
    bodies = iter(make_bodies((2 * args.requests + 2) * 100, 100))
    agent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    ours, stock = free_ports(2)
    procs = start_daphne([ours]) + start_daphne([stock], app="bench.stock_asgi:application")
    cases = (
        ("GET /healthz", lambda c: c.get("/healthz"), 200),
        ("GET /accounts/login/", lambda c: c.get("/accounts/login/"), 200),
        (
            "POST /api/v1/records ×100",
            lambda c: c.post("/api/v1/records", content=next(bodies), headers=agent),
            202,
        ),
    )
    try:
        clients = {
            name: httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
            for name, port in (("console", ours), ("stock", stock))
        }
        print(f"{args.requests} requests per case and server, alternating; one client")
        for label, call, status in cases:
            for client in clients.values():  # warm
                for _ in range(10 if "records" not in label else 1):
                    call(client)
            samples: dict[str, list[float]] = {name: [] for name in clients}
            for _ in range(args.requests):
                for name, client in clients.items():
                    began = time.perf_counter()
                    response = call(client)
                    samples[name].append((time.perf_counter() - began) * 1000)
                    if response.status_code != status:
                        raise SystemExit(f"{name} {label}: HTTP {response.status_code}")
            (o50, o95), (s50, s95) = median_p95(samples["console"]), median_p95(samples["stock"])
            print(f"{label:<26} console p50 {o50:6.2f} p95 {o95:6.2f} ms | "
                  f"stock p50 {s50:6.2f} p95 {s95:6.2f} ms | "
                  f"console/stock p50 {o50 / s50:.2f}× p95 {o95 / s95:.2f}×")  # fmt: skip
        for client in clients.values():
            client.close()
    finally:
        stop(procs)


if __name__ == "__main__":
    main()
