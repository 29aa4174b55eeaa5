"""Cold start, in a fresh interpreter: a process that exits while a never-closed session still
prepares its bounded relation in the background exits cleanly (the in-process preparation tests
are tests/unit/execution/test_preparation.py). Slow: a Python process and a 1M-row table."""

import subprocess
import sys
from pathlib import Path

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import PARQUET_NAME, POLICY_NAME, generate_people, policy_text


def test_exit_without_close_during_preparation_does_not_abort(tmp_path: Path) -> None:
    # A process that exits while a never-closed session still prepares in the background: the
    # daemon thread inside DuckDB aborted the interpreter's finalisation (SIGABRT, exit 134) until
    # an atexit hook stopped it. 1M rows keep the preparation running at exit.
    write_parquet(generate_people(1_000_000, seed=3), tmp_path / PARQUET_NAME)
    (tmp_path / POLICY_NAME).write_text(policy_text(source=PARQUET_NAME), encoding="utf-8")
    script = ("import sys, dpsql\n"
              "con = dpsql.connect(policy=sys.argv[1])\n"
              "cur = con.cursor(); cur.execute('EXPLAIN SELECT COUNT(*) FROM people'); cur.fetchall()\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / POLICY_NAME)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
