from __future__ import annotations

from tests.console_client.conftest import Governed, governed  # noqa: F401  (fixtures)
from tests.e2e import live

live_console = live.live_console
