"""A10: floating-point sums. A DOUBLE sum depends on the order of additions (row order, thread
count, partitioning): one run of a query can give several answers, and the low bits then carry
information the noise calibration does not cover (Casacuberta et al. 2022).

Pass criterion: the pre-noise SUM and AVG are bit-identical for the same multiset of rows, whatever
the row order and the engine's thread count (dpsql clamps, rounds to a public grid and sums
integers as HUGEINT). Measured through dpsql.connect with the Laplace draw replaced by the exact
value. Control: DuckDB's own DOUBLE SUM over the same permutations is not bit-identical.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsql.mechanisms import laplace

ROWS = 300_000  # several DuckDB row groups, so threads really split the scan
SQL = "SELECT SUM(income), AVG(income), SUM(age), AVG(age) FROM people"
GROUPED = "SELECT dept, SUM(income), AVG(income) FROM people GROUP BY dept"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    # Data generation, not privacy noise: numpy's generator is fine here.
    rng = np.random.default_rng(20261125)
    magnitudes = 10.0 ** rng.uniform(-6, 5.6, ROWS)  # 1e-6 .. 4e5, inside the policy bounds [0, 500000]
    return pd.DataFrame({
        "person_id": np.arange(ROWS, dtype=np.int64),  # one row each: bounding drops nothing
        "age": rng.integers(18, 91, ROWS),
        "income": magnitudes * rng.uniform(0.5, 1.0, ROWS) + rng.uniform(0, 1e-9, ROWS),
        "dept": rng.choice(["sales", "hr", "legal", "engineering"], ROWS),
        "region": "north",
    })


def permutations(frame: pd.DataFrame) -> list[pd.DataFrame]:
    out = [frame]
    for seed in (1, 2):
        order = np.random.default_rng(seed).permutation(len(frame))
        out.append(frame.iloc[order].reset_index(drop=True))
    out.append(frame.iloc[::-1].reset_index(drop=True))
    return out


def exact_answers(connect, policy_file, frames: list[pd.DataFrame], sql: str) -> set[str]:
    answers = set()
    for threads in (1, 2, 4):
        policy = policy_file(name=f"policy{threads}.toml", extra=f"[engine]\nthreads = {threads}\n")
        for frame in frames:
            rows = connect(policy, tables={"people": frame}, random_seed=1).execute(sql).fetchall()
            answers.add(repr(sorted((tuple(v.hex() if isinstance(v, float) else v for v in row)) for row in rows)))
    return answers


@pytest.mark.slow
@pytest.mark.parametrize("sql", [SQL, GROUPED])
def test_a10_pre_noise_sums_are_bit_identical_across_orders_and_threads(connect, policy_file, frame, monkeypatch, sql: str) -> None:
    monkeypatch.setattr(laplace.Laplace, "release", lambda self, spec, raw, rng: int(raw))
    assert len(exact_answers(connect, policy_file, permutations(frame), sql)) == 1


def test_a10_control_duckdb_double_sums_depend_on_the_row_order(frame) -> None:
    import duckdb

    sums = set()
    with duckdb.connect() as con:
        con.execute("SET threads = 1")
        for permuted in permutations(frame):
            con.register("people", permuted)
            sums.add(con.execute("SELECT SUM(income) FROM people").fetchall()[0][0].hex())
    assert len(sums) > 1
