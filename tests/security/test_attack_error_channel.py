"""Attack: one exact bit per query through the error channel (an out-of-memory error that only the
target's row triggers). The row predicate

    CASE WHEN person_id = 17 AND age > 40 THEN repeat(region, 700000000) <> region ELSE false END

asks for a 3.5 GB string in the target's row only when the target's secret (age > 40) holds.
TRY(...) does not catch out-of-memory (test_engine_try_contract.py), so under any memory cap the
query would fail after the charge on D and answer on D': the target's bit, exact, at any epsilon.

Pass criterion: the query is refused before the charge (DP125), with the same outcome on both
datasets. Negative control: with the size rule taken out of the analysis, the same harness sees
the two datasets apart (DP300 vs an answer), so the harness can see the attack.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ATTACK = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM people WHERE "
          "CASE WHEN person_id = 17 AND age > 40 THEN repeat(region, {n}) <> region ELSE false END")

_RUN = textwrap.dedent("""
    import json, resource, sys
    import pandas as pd
    import dpsql
    from dpsql.analysis import analyze, rules

    secret_age, disable_rule, sql = int(sys.argv[1]), sys.argv[2] == "no-rule", sys.argv[3]
    if disable_rule:  # the negative control: a build without the size rule
        analyze.SELECT_RULES = tuple(r for r in rules.SELECT_RULES if r is not rules.check_DP125_bounded_arguments)
        analyze.check_bounded_expressions = lambda tree, sql: None
    frame = pd.DataFrame({"person_id": range(200), "age": [30] * 200, "region": ["north"] * 200})
    frame.loc[17, "age"] = secret_age
    con = dpsql.connect(policy=sys.argv[4], tables={"people": frame})
    con.execute("SELECT COUNT(*) FROM people").fetchall()  # the bounded relation, before the cap
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # a memory cap, as a server has
    try:
        con.execute(sql).fetchall()
        outcome = "answered"
    except dpsql.Error as err:
        outcome = err.code
    print(json.dumps({"outcome": outcome, "charges": len(con.ledger())}))
""")

POLICY = """
[budget]
epsilon = 10
delta = 1e-6
default_query_epsilon = 0.1
default_query_delta = 0

[engine]
threads = 1

[tables.people]
privacy_unit = "person_id"
max_rows = 1

[tables.people.columns]
person_id = { type = "int" }
age = { type = "int", lower = 0, upper = 120 }
region = { type = "text" }
"""


def outcome(tmp_path: Path, secret_age: int, rule: str, sql: str) -> dict[str, object]:
    import json

    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _RUN, str(secret_age), rule, sql, str(policy)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_out_of_memory_predicate_is_refused_before_the_charge(tmp_path: Path) -> None:
    sql = ATTACK.format(n=700_000_000)
    on_d, on_neighbour = outcome(tmp_path, 50, "rule", sql), outcome(tmp_path, 30, "rule", sql)
    assert on_d == on_neighbour == {"outcome": "DP125", "charges": 1}  # 1: the warm-up COUNT only


@pytest.mark.slow
def test_negative_control_without_the_size_rule_the_bit_leaks(tmp_path: Path) -> None:
    sql = ATTACK.format(n=700_000_000)
    on_d, on_neighbour = outcome(tmp_path, 50, "no-rule", sql), outcome(tmp_path, 30, "no-rule", sql)
    assert on_d == {"outcome": "DP300", "charges": 2}  # charged, then failed on the target's row
    assert on_neighbour == {"outcome": "answered", "charges": 2}
