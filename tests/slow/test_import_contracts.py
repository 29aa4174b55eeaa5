"""The layering of docs/architecture.md, enforced by import-linter contracts in pyproject.toml."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports")
    # importlinter.cli has no __main__: `python -m importlinter.cli` exits 0 having checked nothing.
    command = [exe] if exe else [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]
    result = subprocess.run([*command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert " kept, 0 broken." in result.stdout, result.stdout  # the contracts were read and checked
