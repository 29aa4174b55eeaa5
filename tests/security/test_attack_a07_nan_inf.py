"""A7: NaN and +-inf injection. One person stores NaN, +-inf, NULL or huge values (NaN passes
`value > upper` checks and DuckDB sorts it as the largest value) hoping to poison a sum, an
average or a clamp.

Moved here unchanged from tests/integration/test_security.py (the A7 block), plus the literal
form of the attack. Pass criterion: NaN, +-inf and NULL are dropped before clamping, so every raw
aggregate moves by at most its sensitivity between D (with the injected person) and D', every
raw value is an exact integer, and no output is NaN; an aggregate over a NaN literal is refused
before the charge (DP115).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import dpsql
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.auxiliary.files import write_duckdb
from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.catalog.loader import load_policy
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.ir.plan import release_name
from dpsql.mechanisms import laplace
from tests.security.attack_support import SECRET, SECRET_ID, forbid_engine

# --- A7: NaN and +-inf injected by one person ---------------------------------------------------

NAN_QUERIES = (
    "SELECT COUNT(*), COUNT(income), SUM(income), AVG(income), SUM(age) FROM people",
    "SELECT dept, COUNT(*), SUM(income), AVG(income) FROM people GROUP BY dept",
)
# Incomes of the injected person, as text cast to DOUBLE inside DuckDB. (A pandas NaN would
# arrive as NULL: DuckDB reads float NaN of a DataFrame as NULL, so real NaN needs a file.)
INJECTED = {
    "nan": ["nan"] * 10,
    "inf": ["inf"] * 10,
    "-inf": ["-inf"] * 10,
    "null": [None] * 10,
    "mixed": ["nan", "inf", "-inf", "1e308", "-1e308", "nan", "500001", "inf", "1e308", "1e308"],
}
SPREAD_DEPTS = ["sales", "hr", "legal", "engineering", "sales", "hr", "legal", "engineering", "sales", "hr"]


def people_database(path: Path, frame: pd.DataFrame, incomes: list[str | None] = ()) -> Path:
    """A DuckDB file with `frame` as table people, plus one person (SECRET_ID) with one row per
    entry of `incomes` (text such as 'nan' or 'inf' cast to DOUBLE by DuckDB), spread over depts."""
    write_duckdb(frame, path, "people")
    with duckdb.connect(str(path)) as con:
        for income, dept in zip(incomes, SPREAD_DEPTS):
            con.execute("INSERT INTO people VALUES (?, 44, CAST(? AS DOUBLE), ?, ?)", [SECRET_ID, income, dept, SECRET])
    return path


def raw_aggregates(policy_path: Path, database: Path, sql: str, seed: int = 987654321) -> tuple[CompiledQuery, dict]:
    """The exact pre-noise aggregates of `sql`: {group key: {release index: value}}."""
    policy = load_policy(policy_path)
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    engine = DuckDBEngine(policy, database)
    try:
        engine.ensure_bounded(compiled.plan.query.table, seed)  # same bounding seed for D and D'
        raw = engine.run(compiled.engine)
    finally:
        engine.close()
    nkeys = len(compiled.plan.query.keys)
    index = {name: i for i, name in enumerate(raw.names)}
    out = {}
    for row in raw.rows:
        out[tuple(row[:nkeys])] = {r: row[index[release_name(r)]] for r in range(len(compiled.plan.releases))}
    return compiled, out


def test_injected_values_really_are_nan_and_inf(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    path = people_database(tmp_path / "d.duckdb", people_frame, INJECTED["mixed"])
    with duckdb.connect(str(path), read_only=True) as con:
        values = [v for (v,) in con.execute("SELECT income FROM people WHERE person_id = ?", [SECRET_ID]).fetchall()]
    assert sum(math.isnan(v) for v in values) == 2 and values.count(math.inf) == 2 and values.count(-math.inf) == 1


@pytest.mark.parametrize("kind", list(INJECTED))
@pytest.mark.parametrize("sql", NAN_QUERIES)
def test_nan_and_inf_of_one_person_move_each_raw_aggregate_by_at_most_its_sensitivity(
    policy_file, people_frame, tmp_path: Path, kind: str, sql: str
) -> None:
    # D' = the people table; D = D' plus one person with 10 rows (over max_rows = 3) whose
    # incomes are NaN/inf/NULL/huge, spread over several departments. For every released raw
    # aggregate, the L1 distance between D and D' over all groups must stay within the planned
    # sensitivity (grid units), and every raw value must be an exact integer. This fails if NaN
    # reaches the sum (|NaN - x| <= s is false), if clamping or max_rows bounding is skipped
    # (10 x 500000 > 3 x 500000), or if a sensitivity is understated.
    policy = policy_file()
    compiled, raw_d = raw_aggregates(policy, people_database(tmp_path / "d.duckdb", people_frame, INJECTED[kind]), sql)
    _, raw_d2 = raw_aggregates(policy, people_database(tmp_path / "d2.duckdb", people_frame), sql)
    for r, release in enumerate(compiled.plan.releases):
        distance = 0
        for key in set(raw_d) | set(raw_d2):
            a, b = raw_d.get(key, {}).get(r) or 0, raw_d2.get(key, {}).get(r) or 0
            assert isinstance(a, int) and isinstance(b, int), (release, a, b)
            distance += abs(a - b)
        assert distance <= release.spec.sensitivity, (release.raw.kind, distance, release.spec.sensitivity)
    # NaN, +-inf and NULL are dropped before clamping (README, "Privacy semantics"): when all the person's values
    # are such, the sum of incomes does not move at all.
    if kind != "mixed" and not compiled.plan.query.keys:
        assert raw_d[()][2] == raw_d2[()][2]


def test_nan_output_is_impossible_end_to_end_and_noise_free_sums_differ_by_at_most_the_sensitivity(
    connect, policy_file, people_frame, tmp_path: Path, monkeypatch
) -> None:
    # The same check through dpsql.connect, with the Laplace draw replaced by the exact value.
    monkeypatch.setattr(laplace.Laplace, "release", lambda self, spec, raw, rng: int(raw))
    policy = policy_file()
    sql = "SELECT SUM(income), AVG(income), COUNT(income) FROM people"
    outputs = []
    for name, incomes in (("d", INJECTED["mixed"]), ("d2", [])):
        con = connect(policy, database=people_database(tmp_path / f"{name}.duckdb", people_frame, incomes), random_seed=3)
        row = con.execute(sql).fetchone()
        assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in row), row
        outputs.append((row, con.ledger()[-1].params["releases"]))
    (row_d, releases), (row_d2, _) = outputs
    sum_sensitivity = Fraction(releases[0]["sensitivity"])  # value units: 3 x 500000
    assert sum_sensitivity == 1_500_000
    assert abs(Fraction(row_d[0]) - Fraction(row_d2[0])) <= sum_sensitivity
    assert abs(row_d[2] - row_d2[2]) <= 3


NAN_LITERALS = [
    "SELECT SUM(CASE WHEN person_id = 42 THEN 'NaN'::DOUBLE END) FROM people",
    "SELECT SUM(CASE WHEN person_id = 42 THEN CAST('inf' AS DOUBLE) ELSE income END) FROM people",
    "SELECT AVG(income * CAST('nan' AS DOUBLE)) FROM people",
    "SELECT SUM(income / 0) FROM people",
]


@pytest.mark.parametrize("sql", NAN_LITERALS)
def test_a07_aggregates_over_injected_nan_literals_are_refused(connect, monkeypatch, sql: str) -> None:
    con = connect(random_seed=1)
    calls = forbid_engine(con, monkeypatch)
    with pytest.raises(dpsql.ProgrammingError) as info:
        con.execute(sql)
    assert info.value.code == "DP115", str(info.value)
    assert con.ledger() == [] and calls == []
