"""What the conformance kit's vectors do against console_client's host, and why: the
harness enforces these tables (tests/conformance/test_ctk.py) and docs/conformance.md reports
them (tests/conformance/test_docs.py)."""

from __future__ import annotations

INCREMENTAL = (
    "needs incremental_output: console_client's host is buffered (buffered_output: true); "
    "the agent_framework bundle releases nothing before the output verdict"
)
NOT_APPLICABLE: dict[str, str] = {
    "AH-CTK-110": INCREMENTAL,
    "AH-CTK-111": INCREMENTAL,
    "AH-CTK-112": INCREMENTAL,
    "AH-CTK-113": INCREMENTAL,
}

OUTPUT_PROJECTION = (
    "agent_framework projects output.content as every message of the AgentResponse (tool "
    "calls and results included), not the final text alone"
)
EXPECTED_FAILURES: dict[str, str] = {
    "AH-CTK-001": OUTPUT_PROJECTION,
}
