"""The ledger's plan identity is the same in every process: computed in fresh interpreters with
different string-hash salts (PYTHONHASHSEED), it equals this process's. Slow: two Python processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpsql
from tests.unit.execution.test_plan_identity import identity

pytestmark = pytest.mark.slow

CHECKOUT = str(Path(dpsql.__file__).resolve().parents[1])
QUERIES = (
    "SELECT COUNT(*) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.3) dept, COUNT(*), AVG(income) FROM people WHERE age > 30 GROUP BY dept",
    "SELECT region, SUM(income) FROM people WHERE dept IN ('sales', 'hr') GROUP BY region",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7) MEDIAN(income), IQR(age), MODE(dept) FROM people",
    "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE n > 10 ORDER BY n DESC",
)
SCRIPT = """
import json, sys
from tests.unit.execution.test_plan_identity import identity
print(json.dumps({"identities": [identity(sql) for sql in json.loads(sys.argv[1])], "salted": hash("dpsql")}))
"""


def fresh(salt: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": salt, "PYTHONPATH": os.pathsep.join([CHECKOUT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(QUERIES)], capture_output=True, text=True, timeout=120,
                          check=False, cwd=CHECKOUT, env=env)
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_the_identity_is_the_same_in_fresh_processes() -> None:
    ours = [identity(sql) for sql in QUERIES]
    one, two = fresh("1"), fresh("2")
    assert one["identities"] == two["identities"] == ours
    assert len(set(ours)) == len(QUERIES)
    # The salts did differ: anything built on hash() of a string would differ too (negative control).
    assert one["salted"] != two["salted"]
