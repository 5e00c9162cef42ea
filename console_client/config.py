"""The agent's hook configuration: the console's declaration, cached on disk, refreshed by ETag.

`DeclarationSource.load()` fetches `GET /api/v1/declaration` and checks the document with
the SDK's own loader before it is used or cached; when the console cannot be reached (or
answers with something that does not load) the last good copy on disk is used. No
configuration and no cached copy raises ConsoleConfigError: the agent must not run
ungoverned. `refresh()` asks with `If-None-Match` and keeps the current copy on 304 or on
any failure.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from agent_hooks import DeclarationError, HostDeclaration, HostRegistry, InterceptionEmitter

log = logging.getLogger(__name__)


class ConsoleConfigError(RuntimeError):
    """No usable hook configuration: the agent refuses to run."""


@dataclass(frozen=True)
class LoadedDeclaration:
    document: dict[str, Any]
    etag: str
    source: str  # "console" or "cache"

    @property
    def console(self) -> dict[str, Any]:
        extensions = self.document.get("extensions") or {}
        console = extensions.get("console") or {}
        return console if isinstance(console, dict) else {}

    @property
    def agent(self) -> str:
        return str(self.console.get("agent") or "agent")

    @property
    def revision(self) -> int | None:
        revision = self.console.get("revision")
        return revision if isinstance(revision, int) else None


def default_cache_dir() -> Path:
    configured = os.environ.get("CONSOLE_CLIENT_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "console_client"


class DeclarationSource:
    """Fetches, validates and caches one agent's (+ custom agent's) declaration."""

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        custom_agent: str | None,
        registry: HostRegistry,
        cache_dir: Path,
        http: Callable[[], httpx.Client],
    ) -> None:
        self._custom_agent = custom_agent
        self._registry = registry
        self._http = http
        # Keyed by console and token without storing either: two agents on one machine
        # never read each other's copy.
        scope = hashlib.sha256(f"{base_url}\n{token}".encode()).hexdigest()[:16]
        self.cache_file = cache_dir / "declarations" / scope / f"{custom_agent or '_agent'}.json"

    def _params(self) -> dict[str, str]:
        return {"custom_agent": self._custom_agent} if self._custom_agent else {}

    def _check(self, document: Any) -> dict[str, Any]:
        if not isinstance(document, dict):
            raise ConsoleConfigError("the declaration is not a JSON object")
        try:
            # Building the emitter runs the binding factories too (a matcher the agent
            # cannot evaluate is refused here, before the document is used or cached).
            InterceptionEmitter.from_declaration(
                HostDeclaration.from_value(document), self._registry
            )
        except DeclarationError as exc:
            raise ConsoleConfigError(f"the declaration does not load: {exc}") from None
        return document

    def _fetch(self, etag: str | None) -> LoadedDeclaration | None:
        """The console's current document; None on 304. Raises ConsoleConfigError."""
        headers = {"If-None-Match": etag} if etag else {}
        try:
            with self._http() as client:
                response = client.get("/api/v1/declaration", params=self._params(), headers=headers)
        except httpx.HTTPError as exc:
            raise ConsoleConfigError(f"console unreachable: {type(exc).__name__}: {exc}") from None
        if response.status_code == 304:
            return None
        if response.status_code == 404 and self._custom_agent:
            raise ConsoleConfigError(
                f"the console has no custom agent {self._custom_agent!r} for this agent token"
            )
        if response.status_code != 200:
            raise ConsoleConfigError(f"console answered {response.status_code} for the declaration")
        try:
            document = self._check(response.json())
        except ValueError:
            raise ConsoleConfigError("the declaration is not JSON") from None
        return LoadedDeclaration(
            document=document, etag=response.headers.get("ETag", ""), source="console"
        )

    def _read_cache(self) -> LoadedDeclaration | None:
        try:
            stored = json.loads(self.cache_file.read_text(encoding="utf-8"))
            document = self._check(stored["document"])
        except (OSError, ValueError, KeyError, TypeError, ConsoleConfigError) as exc:
            if self.cache_file.exists():
                log.warning("ignoring unusable cached declaration %s: %s", self.cache_file, exc)
            return None
        return LoadedDeclaration(
            document=document, etag=str(stored.get("etag", "")), source="cache"
        )

    def _write_cache(self, loaded: LoadedDeclaration) -> None:
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.cache_file.with_suffix(".tmp")
        temporary.write_text(
            json.dumps({"etag": loaded.etag, "document": loaded.document}), encoding="utf-8"
        )
        os.replace(temporary, self.cache_file)

    def load(self) -> LoadedDeclaration:
        """The console's document, else the cached one, else ConsoleConfigError."""
        try:
            loaded = self._fetch(None)
        except ConsoleConfigError as exc:
            cached = self._read_cache()
            if cached is None:
                raise ConsoleConfigError(
                    f"No hook configuration: {exc}, and no cached copy at {self.cache_file}. "
                    "The agent refuses to run ungoverned."
                ) from None
            log.warning("using the cached declaration (%s)", exc)
            return cached
        assert loaded is not None
        self._write_cache(loaded)
        return loaded

    def refresh(self, current: LoadedDeclaration) -> LoadedDeclaration:
        """A newer document if the console has one; the current one otherwise."""
        try:
            loaded = self._fetch(current.etag or None)
        except ConsoleConfigError as exc:
            log.warning(
                "declaration refresh failed, keeping revision %s: %s", current.revision, exc
            )
            return current
        if loaded is None:
            return current
        self._write_cache(loaded)
        return loaded
