"""A per-person aggregate, then a histogram of it (analysis/per_unit.py), through dpsql.connect.

What must hold: the inner SELECT grouped by the privacy unit is one row per person and is not
released; the outer aggregate over it is one release with max_rows = 1 (COUNT has sensitivity 1
per person; a per-person count's values {1..max_rows} are a public domain; a per-person SUM of a
bounded column has range [min(L, m L), max(U, m U)]); its answer is the histogram of the bounded
rows per person; and the neighbouring shapes that would release per-person values or unbounded
ones stay refused before the charge.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error
from tests.conftest import make_policy_text

HISTOGRAM = "SELECT n, COUNT(*) AS persons FROM (SELECT person_id, COUNT(*) AS n FROM people GROUP BY person_id) t GROUP BY n"
FILTERED = ("SELECT n, COUNT(*) AS persons FROM (SELECT person_id, COUNT(*) AS n FROM people WHERE age > 40 "
            "GROUP BY person_id) t GROUP BY n")
TABLEAU = ('SELECT "t0"."m" AS "rows_per_person", COUNT(DISTINCT "people"."person_id") AS "persons" FROM "people" '
           'INNER JOIN (SELECT "people"."person_id" AS "person_id", COUNT(1) AS "m" FROM "people" GROUP BY 1) "t0" '
           'ON ("people"."person_id" = "t0"."person_id") GROUP BY 1')
EXACT = "OPTIONS (epsilon = 100000)"  # noise scale 1e-5 on a count: the discrete Laplace draws 0


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(epsilon=1e6, accountant="basic"), encoding="utf-8")
    return path


def connect(people: pd.DataFrame, policy: Path, seed: int = 3) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people}, policy=policy, random_seed=seed)


def exact(sql: str) -> str:
    return sql.replace("SELECT n,", f"SELECT WITH DIFFERENTIAL_PRIVACY {EXACT} n,", 1)


def rows_per_person(people: pd.DataFrame) -> dict[int, int]:
    """The histogram of rows per person, computed directly (nobody has more than max_rows = 3)."""
    return dict(Counter(people.groupby("person_id").size().tolist()))


def test_the_histogram_is_the_histogram_of_rows_per_person(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        rows = con.execute(exact(HISTOGRAM)).fetchall()
    assert dict(rows) == {**{1: 0, 2: 0, 3: 0}, **rows_per_person(people)}  # every key of the public domain {1, 2, 3}
    assert sum(n for _, n in rows) == people["person_id"].nunique()


def test_negative_control_a_person_over_max_rows_lands_in_the_bounded_bucket(people: pd.DataFrame, policy_path: Path) -> None:
    # Control: a person with 6 rows is bounded to max_rows = 3 before the per-person count, so the
    # direct histogram (which has a bucket 6) is NOT the answer; the bounded one is.
    heavy = pd.concat([people, people[people["person_id"] == people["person_id"].iloc[0]].head(1).assign(person_id=10**6)
                       .pipe(lambda r: pd.concat([r] * 6))])
    with connect(heavy, policy_path) as con:
        rows = dict(con.execute(exact(HISTOGRAM)).fetchall())
    direct = rows_per_person(heavy)
    assert direct.get(6) == 1 and 6 not in rows
    assert rows[3] == direct.get(3, 0) + 1


def test_the_inner_where_filters_rows_before_the_per_person_count(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        rows = dict(con.execute(exact(FILTERED)).fetchall())
    assert rows == {**{1: 0, 2: 0, 3: 0}, **rows_per_person(people[people["age"] > 40])}


def test_tableau_lod_join_is_the_same_histogram(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        tableau = dict(con.execute(TABLEAU.replace("SELECT ", f"SELECT WITH DIFFERENTIAL_PRIVACY {EXACT} ", 1)).fetchall())
        plain = dict(con.execute(exact(HISTOGRAM)).fetchall())
    assert tableau == plain


def test_sensitivities_come_from_the_per_person_ranges(people: pd.DataFrame, policy_path: Path) -> None:
    def explain(con: dpsql.Connection, sql: str) -> str:
        return "\n".join(r[0] for r in con.execute(f"EXPLAIN {sql}").fetchall())

    with connect(people, policy_path) as con:
        histogram = explain(con, HISTOGRAM)
        sums = explain(con, "SELECT SUM(n) AS s FROM (SELECT person_id, COUNT(*) AS n FROM people GROUP BY person_id) t")
        money = explain(con, "SELECT SUM(s) AS s FROM (SELECT person_id, SUM(income) AS s FROM people GROUP BY person_id) t")
        rows = explain(con, "SELECT COUNT(*) AS c FROM people")  # control: over rows, a person counts max_rows = 3 times
        assert con.session.cost_of(HISTOGRAM).epsilon == Fraction(1, 10)
        assert con.session.ledger_entries() == []
    assert "COUNT(*): discrete Laplace, sensitivity 1," in histogram and "all 3 public keys released" in histogram
    assert "n = COUNT(*): in [1, 3]" in histogram and "Cost: epsilon 0.1, delta 0" in histogram
    assert "sensitivity 3," in sums  # a per-person count is at most max_rows = 3
    assert "s = SUM(income): in [0, 1.5e+06]" in money and "sensitivity 1.5e+06" in money  # 3 x 500000
    assert "sensitivity 3," in rows


@pytest.mark.parametrize(("sql", "code"), [
    # the per-person values themselves (one group per person)
    ("SELECT person_id, COUNT(*) AS c FROM (SELECT person_id, COUNT(*) AS n FROM people GROUP BY person_id) t "
     "GROUP BY person_id", "DP107"),
    # grouped by the unit and another column: not one row per person
    ("SELECT n, COUNT(*) AS c FROM (SELECT person_id, dept, COUNT(*) AS n FROM people GROUP BY person_id, dept) t "
     "GROUP BY n", "DP107"),
    # a per-person value with no range from the policy (MAX of text: no bounds)
    ("SELECT m, COUNT(*) AS c FROM (SELECT person_id, MAX(region) AS m FROM people GROUP BY person_id) t GROUP BY m",
     "DP117"),
    # a per-person aggregate of an expression: no range derived here
    ("SELECT m, COUNT(*) AS c FROM (SELECT person_id, COUNT(age + 1) AS m FROM people GROUP BY person_id) t GROUP BY m",
     "DP107"),
    # a per-person sum is continuous: not a key
    ("SELECT s, COUNT(*) AS c FROM (SELECT person_id, SUM(income) AS s FROM people GROUP BY person_id) t GROUP BY s",
     "DP141"),
    # Tableau's join with another aggregate of the joined rows (it would weigh persons by their rows)
    ('SELECT "t0"."m" AS "k", SUM("t0"."m") AS "s" FROM "people" INNER JOIN (SELECT "people"."person_id" AS "person_id", '
     'COUNT(1) AS "m" FROM "people" GROUP BY 1) "t0" ON ("people"."person_id" = "t0"."person_id") GROUP BY 1', "DP126"),
])
def test_unsafe_neighbours_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path, sql: str, code: str) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as refused:
            con.execute(sql)
        assert refused.value.code == code
        assert con.session.ledger_entries() == []
