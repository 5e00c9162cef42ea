"""docs/conformance.md reports exactly what the conformance harness runs."""

from __future__ import annotations

import re
from pathlib import Path

from agent_hooks.ctk import load_vectors

from tests.conformance.expectations import EXPECTED_FAILURES, NOT_APPLICABLE

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
ROW = re.compile(r"^\| (AH-CTK-\d+) \|[^|]*\| ([a-z ]+) \|", re.MULTILINE)


def test_docs_conformance_reports_what_the_harness_runs() -> None:
    vectors = load_vectors()
    text = DOC.read_text(encoding="utf-8")
    rows = dict(ROW.findall(text))
    assert sorted(rows) == sorted(v["id"] for v in vectors)
    expected = {
        vid: "not applicable"
        if vid in NOT_APPLICABLE
        else "fails"
        if vid in EXPECTED_FAILURES
        else "passes"
        for vid in rows
    }
    assert rows == expected
    applicable = len(vectors) - len(NOT_APPLICABLE)
    passing = applicable - len(EXPECTED_FAILURES)
    assert f"{len(vectors)} vectors, {applicable} apply, {passing} pass" in text
