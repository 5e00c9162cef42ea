"""Code names no document the repository does not hold: a comment says the rule itself (or
points to README.md / docs/), never "DESIGN §4" or "SPEC §1" of a document outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = (
    "agents",
    "approvals",
    "audit",
    "users",
    "runtimes",
    "console",
    "console_client",
    "demo",
    "templates",
    "tests",
    "bench",
)
SUFFIXES = {".py", ".html", ".js", ".sh", ".toml", ".yml", ".yaml"}
# "DESIGN §6", "SPEC §1", "DESIGN.md", "SPEC.md", "DESIGN: ..." (a section sign or the file).
OUTSIDE_DOCUMENT = re.compile(r"\b(?:DESIGN|SPEC)(?:\.md\b|\s*§|:)")


def _code_files() -> list[Path]:
    files = [ROOT / "pyproject.toml", ROOT / "Makefile", ROOT / "Dockerfile"]
    for folder in CODE:
        files += [
            path
            for path in sorted((ROOT / folder).rglob("*"))
            if path.suffix in SUFFIXES and path.is_file() and "node_modules" not in path.parts
        ]
    return files


def test_no_code_refers_to_documents_outside_the_repository():
    found = []
    for path in _code_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE_DOCUMENT.search(line) and path != Path(__file__):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_the_pattern_catches_each_spelling():
    for text in ("(DESIGN §6)", "SPEC §1:", "see DESIGN.md", "DESIGN: anyone", "SPEC.md §2"):
        assert OUTSIDE_DOCUMENT.search(text), text
    for text in ("SPECTACULAR_SETTINGS", "DESIGN_TOKENS", "a design choice", "docs/contract.md"):
        assert not OUTSIDE_DOCUMENT.search(text), text
