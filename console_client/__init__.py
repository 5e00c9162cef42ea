"""The agent side of the governance console: load hooks, run them, escalate, ship records.

Pure Python: never imports Django.
"""

from console_client.results import HookDecision, HookResult

__all__ = ["HookDecision", "HookResult"]
