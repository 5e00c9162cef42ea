"""The middleware benchmark serves its own hand-written declaration; it must stay one the
client loads (it once kept a posture the client no longer implements, and `make bench`
stopped at its first script)."""

from __future__ import annotations

import importlib.util
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from console_client import ConsoleHooks

BENCH = Path(__file__).resolve().parents[2] / "bench" / "hook_overhead_middleware.py"


def test_the_middleware_benchmarks_declaration_loads(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_hook_overhead_middleware", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    server = ThreadingHTTPServer(("127.0.0.1", 0), bench.Console)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hooks = ConsoleHooks(
            f"http://127.0.0.1:{server.server_address[1]}",
            "agt_bench",
            cache_dir=tmp_path / "cache",
            transcript_dir=tmp_path / "t",
            refresh_seconds=1e9,
        )
        assert hooks.declaration.document["id"] == "bench-agent"
    finally:
        server.shutdown()
        server.server_close()
