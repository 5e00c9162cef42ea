"""The record sink: interception records to `POST /api/v1/records`, never blocking the agent.

`submit` (called synchronously by the SDK after every emission) only enqueues. A
background task batches up to 500 items (and at most BATCH_BYTES_MAX bytes) per request,
retries with backoff, and spools what it cannot deliver to a local JSONL file that is
replayed once the console answers again. `aclose()` flushes the queue and tries the spool
one last time.

Nothing handed to `submit` is dropped: a batch the console finds too large is split; a
replay claims the spool by renaming it, and a claim left behind by a process that died
mid-replay is adopted by the next replay; a cancelled delivery task spools what it holds.
Delivery is at least once; the console de-duplicates on (agent, session_id, sequence), so
each record is stored once.

A batch the console *refuses* (a 4xx about the batch itself: 400, 413 for a single
record, 415, 422, ...) would be refused again, so it is not spooled: when the console's
400 names the refused items (`/3/record/...`), those go to the dead-letter file and the
rest is sent again; otherwise the whole batch does. The dead-letter file
(`records.dead-letter.jsonl` beside the spool) holds one JSON line per refused item:
`{"batch", "refused_at", "status", "error", "item"}`. Every dead-lettered batch is
reported to the console (`POST /api/v1/records/dead-letters`: id, record count, status,
error), which shows the count on the agent's page; the ids reported so far are kept in
`records.dead-letter.reported`, so a report that fails (or a process that dies first) is
sent by the next delivery, and the console de-duplicates on the batch id. Answers about
the console or the credentials rather than the batch (401, 403, 404, 408, 425, 429) are
retried and spooled like a 5xx.

What leaves is the SDK's payload-free record wire (interception-record.schema.json) with
every free-text `message` removed as well, since a hook's words may quote the payload (but
those of a hook an admin opted in to "record its reason", console_client.reasons), plus
envelope `meta` (custom agent, tool name, framework, revision). Never content.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from agent_hooks import InterceptionRecord

from console_client.reasons import keep_reasons

log = logging.getLogger(__name__)

BATCH_MAX = 500
# Under the console's default request limit (MAX_BODY_BYTES, 1 MiB); a 413 splits further.
BATCH_BYTES_MAX = 512 * 1024
QUEUE_MAX = 10_000
RETRY_DELAYS = (0.2, 0.5, 1.0)
FLUSH_INTERVAL = 0.5
META_KEYS = ("custom_agent", "tool_name", "framework", "revision")
SPOOL_NAME = "records.jsonl"
CLAIM_PREFIX = "records.replay-"
DEAD_LETTER_NAME = "records.dead-letter.jsonl"
DEAD_LETTER_REPORTED_NAME = "records.dead-letter.reported"
DEAD_LETTER_PATH = "/api/v1/records/dead-letters"
# Refusals that are about the console or the credentials, not the batch: retried, spooled.
RETRIED_STATUSES = frozenset({401, 403, 404, 408, 425, 429})
# What a dead-letter report and line keep of the console's answer.
REPORT_ERROR_MAX = 1000
LINE_ERROR_TEXT_MAX = 4096
REPORTS_PER_REQUEST = 100


def record_wire(
    record: InterceptionRecord, reason_hooks: Collection[str] = frozenset()
) -> dict[str, Any]:
    """The record's schema wire without any free text (verdict and warning messages) but the
    reasons of the hooks in `reason_hooks` (those that opted in)."""
    return keep_reasons(record.to_wire(), reason_hooks)


def record_item(
    record: InterceptionRecord, meta: dict[str, Any], reason_hooks: Collection[str] = frozenset()
) -> dict[str, Any]:
    return {
        "record": record_wire(record, reason_hooks),
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
        batch_bytes_max: int = BATCH_BYTES_MAX,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        self._http = http
        self.spool_dir = spool_dir
        self._batch_max = batch_max
        self._batch_bytes_max = batch_bytes_max
        self._instance = uuid.uuid4().hex[:8]
        self._claims = 0
        self._retry_delays = retry_delays
        self._flush_interval = flush_interval
        self._queue: asyncio.Queue[dict[str, Any]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.delivered = 0
        self.spooled = 0
        self.dead_lettered = 0
        # Dead-letter batches of this or an earlier process may still be unreported.
        self._report_due = True

    @property
    def spool_file(self) -> Path:
        return self.spool_dir / SPOOL_NAME

    @property
    def dead_letter_file(self) -> Path:
        return self.spool_dir / DEAD_LETTER_NAME

    @property
    def _reported_file(self) -> Path:
        return self.spool_dir / DEAD_LETTER_REPORTED_NAME

    def submit(
        self,
        record: InterceptionRecord,
        meta: dict[str, Any],
        reason_hooks: Collection[str] = frozenset(),
    ) -> None:
        item = record_item(record, meta, reason_hooks)
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
            held = [await self._queue.get()]
            taken = 1
            try:
                # Let a burst of emissions land in one request.
                await asyncio.sleep(self._flush_interval)
                while len(held) < self._batch_max and not self._queue.empty():
                    held.append(self._queue.get_nowait())
                    taken += 1
                try:
                    await self._send_with_retries(held)
                except DeliveryError as exc:
                    log.warning("console records not delivered (%s); spooling %d", exc, len(held))
                    self._spool(held)
                    held = []
                    continue
                held = []
                await self._replay_spool()
                await self._report_dead_letters()
            except asyncio.CancelledError:
                # Shutting down with records in hand (or queued): keep them for a replay.
                while not self._queue.empty():
                    held.append(self._queue.get_nowait())
                    taken += 1
                if held:
                    self._spool(held)
                raise
            finally:
                for _ in range(taken):
                    self._queue.task_done()

    def _encode(self, batch: list[dict[str, Any]]) -> bytes:
        return json.dumps(batch, separators=(",", ":")).encode("utf-8")

    async def _send(self, batch: list[dict[str, Any]]) -> None:
        """Deliver `batch`, split into requests the console accepts; DeliveryError if not."""
        body = self._encode(batch)
        if len(body) > self._batch_bytes_max and len(batch) > 1:
            await self._send_halves(batch)
            return
        try:
            async with self._http() as client:
                response = await client.post(
                    "/api/v1/records", content=body, headers={"Content-Type": "application/json"}
                )
        except httpx.HTTPError as exc:
            raise DeliveryError(f"console unreachable: {type(exc).__name__}") from None
        status = response.status_code
        if status == 413 and len(batch) > 1:
            await self._send_halves(batch)
            return
        if 400 <= status < 500 and status not in RETRIED_STATUSES:
            await self._refused(batch, status, _answer(response))
            return
        if status >= 300:
            raise DeliveryError(f"console answered {status}")
        self.delivered += len(batch)

    async def _refused(self, batch: list[dict[str, Any]], status: int, answer: Any) -> None:
        """Dead-letter what the console refused; send the items it did not name again."""
        named = _refused_items(answer, len(batch)) if status == 400 else set()
        if not named or len(named) == len(batch):
            self._dead_letter(batch, status, answer)
            return
        self._dead_letter([batch[i] for i in sorted(named)], status, answer)
        rest = [item for i, item in enumerate(batch) if i not in named]
        try:
            await self._send(rest)
        except DeliveryError:
            # Keep the rest for a replay; a retry of the whole batch would refuse (and
            # dead-letter) the named items a second time.
            self._spool(rest)

    def _dead_letter(self, items: list[dict[str, Any]], status: int, answer: Any) -> None:
        head = {
            "batch": uuid.uuid4().hex,
            "refused_at": datetime.now(UTC).isoformat(),
            "status": status,
            "error": answer,
        }
        lines = "".join(
            json.dumps({**head, "item": item}, separators=(",", ":")) + "\n" for item in items
        )
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        with self.dead_letter_file.open("a", encoding="utf-8") as handle:
            handle.write(lines)
        self.dead_lettered += len(items)
        self._report_due = True
        log.error(
            "console refused %d records (%s: %s); kept in %s",
            len(items),
            status,
            _error_text(answer)[:300],
            self.dead_letter_file,
        )

    async def _report_dead_letters(self) -> None:
        """Tell the console about dead-letter batches it has not acknowledged yet."""
        if not self._report_due:
            return
        try:
            pending = self._unreported()
            for start in range(0, len(pending), REPORTS_PER_REQUEST):
                chunk = pending[start : start + REPORTS_PER_REQUEST]
                async with self._http() as client:
                    response = await client.post(DEAD_LETTER_PATH, json=chunk)
                if response.status_code >= 300:
                    log.warning("dead-letter report answered %d", response.status_code)
                    # A refused report would be refused again: wait for the next dead letter.
                    retried = (
                        response.status_code >= 500 or response.status_code in RETRIED_STATUSES
                    )
                    self._report_due = retried
                    return
                with self._reported_file.open("a", encoding="utf-8") as handle:
                    handle.write("".join(f"{report['batch']}\n" for report in chunk))
        except (httpx.HTTPError, OSError) as exc:
            log.warning("dead-letter report not delivered: %s", type(exc).__name__)
            return
        self._report_due = False

    def _unreported(self) -> list[dict[str, Any]]:
        reported: set[str] = set()
        with contextlib.suppress(FileNotFoundError):
            reported = set(self._reported_file.read_text(encoding="utf-8").split())
        reports: dict[str, dict[str, Any]] = {}
        for line in _lines(self.dead_letter_file):
            batch = line.get("batch")
            if not isinstance(batch, str) or batch in reported:
                continue
            report = reports.setdefault(
                batch,
                {
                    "batch": batch,
                    "records": 0,
                    "status": line.get("status"),
                    "error": _error_text(line.get("error"))[:REPORT_ERROR_MAX],
                    "refused_at": line.get("refused_at"),
                },
            )
            report["records"] += 1
        return list(reports.values())

    async def _send_halves(self, batch: list[dict[str, Any]]) -> None:
        middle = len(batch) // 2
        await self._send(batch[:middle])
        await self._send(batch[middle:])

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

    def _claim_path(self) -> Path:
        self._claims += 1
        return self.spool_dir / f"{CLAIM_PREFIX}{os.getpid()}-{self._instance}-{self._claims}"

    def _claim_spool(self) -> list[Path]:
        """Take the spool, and replays abandoned by processes that died, by renaming them
        (atomic: of two processes adopting one file, one gets it). Oldest first."""
        if not self.spool_dir.exists():
            return []
        sources = [
            path
            for path in self.spool_dir.glob(f"{CLAIM_PREFIX}*")
            if not _claim_owner_alive(path.name)
        ]
        sources.sort(key=_mtime)
        sources.append(self.spool_file)
        claimed = []
        for source in sources:
            target = self._claim_path()
            try:
                os.replace(source, target)
            except FileNotFoundError:
                continue
            claimed.append(target)
        return claimed

    async def _replay_spool(self) -> None:
        """Send the spool in order; whatever is not delivered (failure or cancellation) is
        spooled again before the claimed files are removed."""
        claimed = self._claim_spool()
        if not claimed:
            return
        items = []
        for path in claimed:
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    items.append(json.loads(line))
                except ValueError:
                    log.error("dropping an unreadable spooled record line")
        sent = 0
        try:
            while sent < len(items):
                chunk = items[sent : sent + self._batch_max]
                await self._send(chunk)
                sent += len(chunk)
        except DeliveryError:
            pass
        finally:
            if sent < len(items):
                self._spool(items[sent:])
                self.spooled -= len(items) - sent
            for path in claimed:
                path.unlink(missing_ok=True)

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
        await self._report_dead_letters()


def _claim_owner_alive(name: str) -> bool:
    """Whether the process that claimed a replay file (`records.replay-<pid>[-…]`) runs.
    This process's own claims are in flight, never abandoned (cancellation re-spools)."""
    pid_text = name[len(CLAIM_PREFIX) :].split("-", 1)[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _answer(response: httpx.Response) -> Any:
    """The console's error object, or (another server's answer) a bounded text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:LINE_ERROR_TEXT_MAX]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    return response.text[:LINE_ERROR_TEXT_MAX]


def _error_text(answer: Any) -> str:
    if isinstance(answer, dict):
        return f"{answer.get('code') or 'error'}: {answer.get('message') or ''}".strip()
    return str(answer or "")


def _refused_items(answer: Any, size: int) -> set[int]:
    """Indexes of the items a 400 names (`/3/record/verdict` → 3)."""
    fields = answer.get("fields") if isinstance(answer, dict) else None
    named: set[int] = set()
    for pointer in fields if isinstance(fields, dict) else ():
        head = str(pointer).split("/")[1:2]
        if head and head[0].isdigit() and int(head[0]) < size:
            named.add(int(head[0]))
    return named


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                yield value
