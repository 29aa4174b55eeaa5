"""A NULL in an integer column adds nothing to SUM or AVG (it once added the lower bound: DuckDB's
and Spark's GREATEST skip NULLs, so the clamp GREATEST(NULL, 18) gave 18)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.catalog.loader import policy_from_dict
from dpsql.mechanisms import laplace

POLICY = {
    "budget": {"epsilon": 100, "delta": 1e-6, "default_query_epsilon": 1, "default_query_delta": 0},
    "tables": {"t": {"privacy_unit": "pid", "max_rows": 1, "columns": {
        "pid": {"type": "int"}, "age": {"type": "int", "lower": 18, "upper": 90}}}},
}


@pytest.mark.parametrize("nulls", [0, 40])
def test_null_ages_add_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nulls: int) -> None:
    monkeypatch.setattr(laplace.Laplace, "release", lambda self, spec, raw, rng: int(raw))  # exact
    ages = [30] * 60 + [None] * nulls
    frame = pd.DataFrame({"pid": range(len(ages)), "age": pd.array(ages, dtype="Int64")})
    with dpsql.connect(policy=policy_from_dict(POLICY), tables={"t": frame}, ledger=":memory:") as con:
        total, count, mean = con.execute("SELECT SUM(age), COUNT(age), AVG(age) FROM t").fetchone()
    assert (total, count) == (1800, 60)  # a NULL counted at the lower bound would give 1800 + 18 * nulls
    assert mean == pytest.approx(30)
