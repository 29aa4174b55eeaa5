"""The test tiers (tests/conftest.py, CONTRIBUTING.md): every directory of tests is a tier with a
registered marker, a plain `pytest` runs the fast tiers only, and the README's test command is
the one .ci/run runs (every tier)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.conftest import FAST_TIERS, OTHER_TIERS, TESTS, tier_of

ROOT = TESTS.parent


def untiered(directories: list[Path]) -> list[str]:
    """Directories under tests/ that hold test files but are no tier (a plain `pytest` would run
    them, or skip them, by accident)."""
    return sorted(d.name for d in directories if d.name not in FAST_TIERS + OTHER_TIERS and any(d.rglob("test_*.py")))


def test_every_directory_of_tests_is_a_tier() -> None:
    assert untiered([d for d in TESTS.iterdir() if d.is_dir()]) == []


def test_negative_control_a_new_directory_of_tests_is_flagged(tmp_path: Path) -> None:
    (tmp_path / "fuzz").mkdir()
    (tmp_path / "fuzz" / "test_x.py").write_text("", encoding="utf-8")
    (tmp_path / "data").mkdir()  # no tests in it: not a tier, not flagged
    assert untiered([tmp_path / "fuzz", tmp_path / "data", TESTS / "unit"]) == ["fuzz"]


def test_a_test_file_gets_the_tier_of_its_first_directory() -> None:
    assert tier_of(TESTS / "unit" / "server" / "test_codec.py") == "unit"
    assert tier_of(TESTS / "integration" / "server" / "test_psql.py") == "integration"
    assert tier_of(TESTS / "slow" / "test_server_startup.py") == "slow"
    assert tier_of(TESTS / "conftest.py") is None
    assert tier_of(ROOT / "bench" / "robust.py") is None


def test_every_tier_is_a_registered_marker() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    registered = {line.split(":")[0] for line in options["markers"]}
    assert set(FAST_TIERS + OTHER_TIERS) <= registered


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = re.search(r"^pip install -e '\.\[test,spark\]' && python -m pytest (.*)$", readme, re.MULTILINE)
    assert command is not None, "the README's second command"
    assert command.group(1) == "--all -n auto --dist loadfile"
    assert re.search(r"^python3 -m pytest -q --all -n auto --dist loadfile$", ci, re.MULTILINE), ".ci/run must run every tier"
