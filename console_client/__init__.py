"""The agent side of the governance console: load hooks, run them, escalate, ship records.

Pure Python: never imports Django.
"""

from console_client.client import ConsoleHooks
from console_client.config import ConsoleConfigError
from console_client.results import HookDecision, HookResult
from console_client.runners import (
    arun_command_hook,
    arun_prompt_hook,
    run_command_hook,
    run_prompt_hook,
)

__all__ = [
    "ConsoleConfigError",
    "ConsoleHooks",
    "HookDecision",
    "HookResult",
    "arun_command_hook",
    "arun_prompt_hook",
    "run_command_hook",
    "run_prompt_hook",
]
