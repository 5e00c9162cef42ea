"""No module of the server apps or console_client grows past 500 lines: past that a module
holds more than one idea, and a newcomer must read it whole to change one of them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted({path.parent.name for path in ROOT.glob("*/apps.py")} | {"console_client"})
MAX_LINES = 500


def test_the_packages_are_found() -> None:
    assert {"agents", "approvals", "audit", "console", "console_client", "runtimes"} <= set(
        PACKAGES
    )


def test_no_module_is_over_500_lines() -> None:
    long = {
        file.relative_to(ROOT).as_posix(): lines
        for package in PACKAGES
        for file in (ROOT / package).rglob("*.py")
        if "migrations" not in file.parts
        and (lines := len(file.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
