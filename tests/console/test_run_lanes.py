"""tests/run_lanes.py, what `make test` runs: the lanes at once (the PostgreSQL suite in two
halves, and the sqlite lane on the embedded default), output prefixed per lane, and a failure
in any fails the run."""

from __future__ import annotations

import os
import sys

import pytest

from tests import run_lanes


def _lane(name: str, code: str) -> run_lanes.Lane:
    return run_lanes.Lane(name, [sys.executable, "-c", code], dict(os.environ))


def test_the_sqlite_lane_runs_on_the_embedded_default(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/console")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("CHANNELS_PREFIX", "ci")
    postgresql, units, sqlite = run_lanes.lanes(["-x"], str(tmp_path))
    assert postgresql.env["DATABASE_URL"] and postgresql.env["REDIS_URL"]
    pytest_args = ["-q", "-p", "no:cacheprovider"]
    assert postgresql.args[:3] == [sys.executable, "-m", "pytest"]
    assert postgresql.args[3:] == [*pytest_args, *run_lanes.SERVER_PATHS, "-x"]
    # The other half of the PostgreSQL suite: every other test folder, its own services.
    unit_paths = [arg for arg in units.args if arg.startswith("tests/")]
    assert "tests/audit" in unit_paths and not set(unit_paths) & set(run_lanes.SERVER_PATHS)
    assert (units.env["DATABASE_URL"], units.env["REDIS_URL"], units.env["CHANNELS_PREFIX"]) == (
        "postgres://postgres@127.0.0.1:5432/console_units",
        "redis://127.0.0.1:6379/1",
        "units",
    )
    assert units.args[-1] == "-x"
    # After the sqlite lane, in its thread: a few unit folders on PostgreSQL, services of
    # their own.
    after = sqlite.then
    assert after is not None and after.then is None
    assert after.args[3:] == [*pytest_args, *run_lanes.AFTER_SQLITE_PATHS, "-x"]
    assert not set(run_lanes.AFTER_SQLITE_PATHS) & set(unit_paths)
    assert (after.env["DATABASE_URL"], after.env["REDIS_URL"], after.env["CHANNELS_PREFIX"]) == (
        "postgres://postgres@127.0.0.1:5432/console_units2",
        "redis://127.0.0.1:6379/2",
        "units2",
    )
    assert not {"DATABASE_URL", "REDIS_URL", "CHANNELS_PREFIX"} & set(sqlite.env)
    assert sqlite.env["SQLITE_PATH"].startswith(str(tmp_path))
    assert sqlite.args[3:] == [
        *pytest_args,
        "-m",
        "not postgresql and not redis",
        *run_lanes.SQLITE_PATHS,
        "-x",
    ]


def test_every_test_folder_runs_on_postgresql(tmp_path):
    folders = {
        f"tests/{folder.name}"
        for folder in (run_lanes.ROOT / "tests").iterdir()
        if folder.is_dir() and any(folder.glob("test_*.py"))
    }
    assert (
        set(run_lanes.SERVER_PATHS)
        | set(run_lanes.unit_paths())
        | set(run_lanes.AFTER_SQLITE_PATHS)
        == folders
    )


def test_named_tests_replace_the_sqlite_lanes_folders(tmp_path):
    _, sqlite = run_lanes.lanes(["tests/audit/test_export.py::test_csv", "-k", "x"], str(tmp_path))
    assert [arg for arg in sqlite.args if arg.startswith("tests/")] == [
        "tests/audit/test_export.py::test_csv"
    ]


def test_a_lane_run_after_another_runs_in_its_thread_and_its_failure_fails(capsys):
    first = _lane("first", "print('one')")
    first.then = _lane("after", "import sys; print('two'); sys.exit(3)")
    assert run_lanes.run([first, _lane("other", "print('three')")]) == 1
    out = capsys.readouterr().out
    assert "[first] one" in out and "[after] two" in out
    assert "lane first: ok" in out and "lane after: FAILED (exit 3)" in out


@pytest.mark.parametrize(("second", "expected"), [("raise SystemExit(0)", 0), ("1/0", 1)])
def test_both_lanes_run_prefixed_and_either_failing_fails(capsys, second, expected):
    lanes = [_lane("one", "print('from one')"), _lane("second", second)]
    assert run_lanes.run(lanes) == expected
    out = capsys.readouterr().out
    assert "[one   ] from one" in out
    assert "lane one: ok" in out
    assert ("lane second: ok" in out) == (expected == 0)
    assert lanes[1].returncode == (0 if expected == 0 else 1)
