"""An agent process that starts, replays its record spool and exits (`ConsoleHooks` then
`aclose()`): what a restarted agent does first. The fault runs SIGKILL it mid-replay.

    python bench/faults/replay_once.py URL TOKEN CACHE_DIR SPOOL_DIR
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console_client import ConsoleHooks  # noqa: E402


async def main(url: str, token: str, cache_dir: str, spool_dir: str) -> None:
    hooks = ConsoleHooks(url, token, cache_dir=cache_dir, spool_dir=spool_dir)
    await hooks.aclose()
    print(f"delivered={hooks.records.delivered}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
