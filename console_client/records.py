"""The record sink: interception records to `POST /api/v1/records`, never blocking the agent.

`submit` (called synchronously by the SDK after every emission) only enqueues. A
background task batches up to 500 items per request, retries with backoff, and spools
what it cannot deliver to a local JSONL file that is replayed once the console answers
again. `aclose()` flushes the queue and tries the spool one last time.

What leaves is the SDK's payload-free record wire (interception-record.schema.json) with
every free-text `message` removed as well, since a hook's words may quote the payload,
plus envelope `meta` (custom agent, tool name, framework, revision). Never content.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from agent_hooks import InterceptionRecord

log = logging.getLogger(__name__)

BATCH_MAX = 500
QUEUE_MAX = 10_000
RETRY_DELAYS = (0.2, 0.5, 1.0)
FLUSH_INTERVAL = 0.5
META_KEYS = ("custom_agent", "tool_name", "framework", "revision")


def record_wire(record: InterceptionRecord) -> dict[str, Any]:
    """The record's schema wire without any free text (verdict and warning messages)."""
    wire = record.to_wire()
    verdict = dict(wire["verdict"])
    verdict.pop("message", None)
    if verdict.get("warnings"):
        verdict["warnings"] = [
            {k: v for k, v in warning.items() if k != "message"} for warning in verdict["warnings"]
        ]
    wire["verdict"] = verdict
    return wire


def record_item(record: InterceptionRecord, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": record_wire(record),
        "meta": {key: meta[key] for key in META_KEYS if meta.get(key) is not None},
    }


class DeliveryError(RuntimeError):
    pass


class RecordSink:
    """Queue + background delivery + on-disk spool."""

    def __init__(
        self,
        *,
        http: Callable[[], httpx.AsyncClient],
        spool_dir: Path,
        batch_max: int = BATCH_MAX,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        self._http = http
        self.spool_dir = spool_dir
        self._batch_max = batch_max
        self._retry_delays = retry_delays
        self._flush_interval = flush_interval
        self._queue: asyncio.Queue[dict[str, Any]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.delivered = 0
        self.spooled = 0

    @property
    def spool_file(self) -> Path:
        return self.spool_dir / "records.jsonl"

    def submit(self, record: InterceptionRecord, meta: dict[str, Any]) -> None:
        item = record_item(record, meta)
        queue = self._ensure_started()
        try:
            queue.put_nowait(item)
        except asyncio.QueueFull:
            self._spool([item])

    def _ensure_started(self) -> asyncio.Queue[dict[str, Any]]:
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=QUEUE_MAX)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._deliver_forever())
        return self._queue

    async def _deliver_forever(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            # Let a burst of emissions land in one request.
            await asyncio.sleep(self._flush_interval)
            while len(batch) < self._batch_max and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._send_with_retries(batch)
                await self._replay_spool()
            except DeliveryError as exc:
                log.warning("console records not delivered (%s); spooling %d", exc, len(batch))
                self._spool(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _send(self, batch: list[dict[str, Any]]) -> None:
        try:
            async with self._http() as client:
                response = await client.post("/api/v1/records", json=batch)
        except httpx.HTTPError as exc:
            raise DeliveryError(f"console unreachable: {type(exc).__name__}") from None
        if response.status_code == 400:
            # A refused batch will be refused again: keep it out of the spool, say so loudly.
            log.error("console refused %d records: %s", len(batch), response.text[:500])
            return
        if response.status_code >= 300:
            raise DeliveryError(f"console answered {response.status_code}")
        self.delivered += len(batch)

    async def _send_with_retries(self, batch: list[dict[str, Any]]) -> None:
        for chunk_start in range(0, len(batch), self._batch_max):
            chunk = batch[chunk_start : chunk_start + self._batch_max]
            for attempt, delay in enumerate((*self._retry_delays, None)):
                try:
                    await self._send(chunk)
                    break
                except DeliveryError:
                    if delay is None or (self._closing and attempt > 0):
                        raise
                    await asyncio.sleep(delay)

    def _spool(self, items: list[dict[str, Any]]) -> None:
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        with self.spool_file.open("a", encoding="utf-8") as handle:
            for item in items:
                handle.write(json.dumps(item, separators=(",", ":")) + "\n")
        self.spooled += len(items)

    async def _replay_spool(self) -> None:
        """Send the spool in order; whatever fails stays spooled for the next attempt."""
        if not self.spool_file.exists():
            return
        replaying = self.spool_file.with_suffix(f".replay-{os.getpid()}")
        os.replace(self.spool_file, replaying)
        lines = replaying.read_text(encoding="utf-8").splitlines()
        items = []
        for line in lines:
            try:
                items.append(json.loads(line))
            except ValueError:
                log.error("dropping an unreadable spooled record line")
        try:
            for start in range(0, len(items), self._batch_max):
                chunk = items[start : start + self._batch_max]
                try:
                    await self._send(chunk)
                except DeliveryError:
                    self._spool(items[start:])
                    self.spooled -= len(items) - start
                    return
        finally:
            replaying.unlink(missing_ok=True)

    async def flush(self) -> None:
        """Wait until every submitted record is delivered or spooled."""
        if self._queue is not None and self._task is not None and not self._task.done():
            await self._queue.join()

    async def aclose(self) -> None:
        self._closing = True
        await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(DeliveryError, OSError):
            await self._replay_spool()
