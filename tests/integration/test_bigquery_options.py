"""BigQuery's option names in OPTIONS (analysis/bind.py, `_bigquery_options`), through dpsql.connect.

What must hold: `max_groups_contributed = k` lowers the table's max_groups for the query (partition
selection's L0 bound, shown in EXPLAIN), never raises it; the lowered query reads a keyed relation
of its own (a relation kept under one limit is never read under another); `privacy_unit_column`
must name the table's unit. Refusals come before the charge.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error
from tests.conftest import make_policy_text

GROUPED = "region, COUNT(*) AS n FROM people GROUP BY region"
LOWERED = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6, max_groups_contributed = 1) {GROUPED}"
DEFAULT = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) {GROUPED}"
VERBATIM = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, max_groups_contributed = 2, "
            f"privacy_unit_column = person_id) {GROUPED}")


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(epsilon=100.0, delta=1e-3), encoding="utf-8")  # max_groups = 2, max_rows = 3
    return path


def explain(con: dpsql.Connection, sql: str) -> str:
    return "\n".join(r[0] for r in con.execute(f"EXPLAIN {sql}").fetchall())


def test_max_groups_contributed_lowers_the_l0_bound(people: pd.DataFrame, policy_path: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=1) as con:
        lowered, default = explain(con, LOWERED), explain(con, DEFAULT)
    assert "GroupBy: region (partition selection, at most 1 key(s) per person)" in lowered
    # Control: without the option the policy's max_groups = 2 applies.
    assert "GroupBy: region (partition selection, at most 2 key(s) per person)" in default


def test_the_lowered_query_reads_a_keyed_relation_of_its_own(people: pd.DataFrame, policy_path: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=1) as con:
        con.execute(LOWERED).fetchall()
        after_lowered = explain(con, DEFAULT)
        con.execute(DEFAULT).fetchall()
        after_both = explain(con, DEFAULT)
    # The relation kept to 1 key per person is not the one the policy's limit reads.
    assert "Keyed relation of people (region): built by the first query that groups by these columns" in after_lowered
    assert "Keyed relation of people (region): built by an earlier query" in after_both  # control: it is reused once built


def test_verbatim_options_that_restate_the_policy_are_answered(people: pd.DataFrame, policy_path: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=1) as con:
        con.execute(VERBATIM).fetchall()
        assert len(con.ledger()) == 1


@pytest.mark.parametrize("options", [
    "max_groups_contributed = 3",           # above the policy's max_groups = 2: never raised
    "max_groups_contributed = 0",
    "max_groups_contributed = 1.5",
    "privacy_unit_column = age",            # not the unit
    "privacy_unit_column = region",
])
def test_options_beyond_the_policy_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path,
                                                                 options: str) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=1) as con:
        with pytest.raises(Error) as refused:
            con.execute(f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6, {options}) {GROUPED}")
        assert refused.value.code == "DP120"
        assert con.ledger() == []
