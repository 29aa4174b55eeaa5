"""Start-up weight: `import dpsql`, the `dpsql` command and an ordinary query load none of the heavy
libraries (each is imported where it is used: pandas by `fetchdf` and data generation, numpy by the
Median Mechanism layer, pyarrow by Arrow results, prompt_toolkit and pygments by the interactive
prompt, pyspark and sqlglot's Spark dialect by the Spark engine). Checked in a fresh interpreter:
in this one, other tests have imported them already. Timings are measured in bench/startup.py,
not here. Slow: a Python process per test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import PARQUET_NAME, POLICY_NAME, generate_people, policy_text

pytestmark = pytest.mark.slow

HEAVY = ("pandas", "numpy", "pyarrow", "scipy", "dp_accounting", "pyspark", "prompt_toolkit", "pygments",
         "sqlglot.dialects.spark")


CHECKOUT = str(Path(dpsql.__file__).resolve().parents[1])  # the dpsql under test, whatever the working directory


def loaded(code: str, *args: str, cwd: Path) -> set[str]:
    """The HEAVY modules in sys.modules after running `code` in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([CHECKOUT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120, check=False,
                          cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    write_parquet(generate_people(2_000, seed=1), tmp_path / PARQUET_NAME)
    (tmp_path / POLICY_NAME).write_text(policy_text(source=PARQUET_NAME), encoding="utf-8")
    return tmp_path / POLICY_NAME


def test_import_dpsql_loads_no_heavy_library(tmp_path: Path) -> None:
    assert loaded("import dpsql", cwd=tmp_path) == set()


def test_the_command_line_loads_no_heavy_library(tmp_path: Path) -> None:
    assert loaded("import dpsql.cli", cwd=tmp_path) == set()


QUERIES = ("SELECT dept, COUNT(*) FROM people GROUP BY dept",
           "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept ORDER BY n DESC LIMIT 3",  # post-processing
           "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE n > 10",  # released rows
           "SELECT MEDIAN(income) FROM people")
RUN = ("import sys, dpsql\n"
       "con = dpsql.connect(policy=sys.argv[1], ledger=':memory:')\n"
       "for sql in sys.argv[2:]:\n"
       "    con.execute(sql).fetchall()\n")


def test_ordinary_queries_load_no_heavy_library(policy: Path) -> None:
    # The charges included: the privacy filter decides without numpy, scipy or dp-accounting.
    assert loaded(RUN + "con.budget, con.queries_left\n", str(policy), *QUERIES, cwd=policy.parent) == set()


def test_negative_control_a_module_that_imports_pandas_is_seen(tmp_path: Path) -> None:
    # The check can fail: backend/auxiliary/files.py writes DataFrames, and imports pandas at its top.
    assert "pandas" in loaded("import dpsql, dpsql.backend.auxiliary.files", cwd=tmp_path)


def test_negative_control_fetchdf_is_seen(policy: Path) -> None:
    # ... and after a query, the one DB-API call that builds a DataFrame imports pandas.
    assert "pandas" in loaded(RUN + "con.execute(sys.argv[2]).fetchdf()\n", str(policy), QUERIES[0], cwd=policy.parent)
