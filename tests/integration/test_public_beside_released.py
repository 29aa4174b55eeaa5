"""A PUBLIC table beside released results (analysis/post_processing.py, execution/public_inputs.py).

What must hold: the outer query may join released rows with a public table of the policy, whose
rows are read exactly and free; the statement costs its releases only, charged once before any
data is read; the answer is the release joined with the public rows, as if written by hand; a
private table (or a row-level relation over one, even named like the public table) in the same
place is still refused before the charge, and a public table over the size cap is refused
uncharged (DP129).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.demo.people import DEPTS
from dpsql.errors import Error
from dpsql.execution import public_inputs
from tests.conftest import make_policy_text

PUBLIC = """
[tables.depts]
public = true
[tables.depts.columns]
name = { type = "text" }
building = { type = "int" }
"""
RELEASE = "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept"
JOINED = f"SELECT d.name, d.building, t.n FROM depts d LEFT JOIN ({RELEASE}) t ON d.name = t.dept ORDER BY d.name"
# Metabase's spelling: schema-qualified names, the public table first.
METABASE = (f'SELECT "public"."depts"."name" AS "name", "q"."n" AS "n" FROM "public"."depts" '
            f'LEFT JOIN ({RELEASE}) "q" ON "public"."depts"."name" = "q"."dept"')


def depts(extra: int = 0) -> pd.DataFrame:
    """Every demo department with a building (and `extra` departments no person is in)."""
    names = [*DEPTS, *(f"new{i}" for i in range(extra))]
    return pd.DataFrame({"name": names, "building": [10 + i for i in range(len(names))]})


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(accountant="basic", extra=PUBLIC), encoding="utf-8")  # exact sums in the ledger
    return path


def connect(people: pd.DataFrame, policy: Path, public: pd.DataFrame, seed: int = 5) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people, "depts": public}, policy=policy, random_seed=seed)


def by_hand(people: pd.DataFrame, policy: Path, public: pd.DataFrame) -> list[tuple[object, ...]]:
    """The same release on its own (same seed: the same noise), joined with the public rows in Python."""
    with connect(people, policy, public) as con:
        released = dict(con.execute(f"SELECT t.dept, t.n FROM ({RELEASE}) t").fetchall())
    return sorted((name, building, released.get(name)) for name, building in public.itertuples(index=False))


def test_public_rows_join_the_release_exactly(people: pd.DataFrame, policy_path: Path) -> None:
    public = depts(extra=2)
    with connect(people, policy_path, public) as con:
        cursor = con.execute(JOINED)
        rows, noise = cursor.fetchall(), cursor.noise_info
        entries = con.session.ledger_entries()
    assert rows == by_hand(people, policy_path, public)
    assert len(rows) == len(DEPTS) + 2  # a public row no release matches: LEFT JOIN keeps it, without a count
    assert [r[2] for r in rows if r[0].startswith("new")] == [None, None]
    assert noise[0] is None and noise[1] is None and noise[2] is not None  # public columns exact, the count noisy
    assert len(entries) == 1 and entries[0].cost.epsilon == Fraction(1, 10)  # the release only


def test_negative_control_other_public_rows_give_another_answer(people: pd.DataFrame, policy_path: Path) -> None:
    # Control: the comparison above would catch public rows read from elsewhere or not joined:
    # the same release joined with other buildings is another answer.
    public = depts()
    moved = public.assign(building=public["building"] + 1)
    with connect(people, policy_path, public) as con:
        rows = con.execute(JOINED).fetchall()
    assert rows != by_hand(people, policy_path, moved)


def test_metabase_spelling_is_answered(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path, depts()) as con:
        rows = con.execute(METABASE).fetchall()
    assert sorted(r[0] for r in rows) == sorted(DEPTS)


def test_explain_cost_is_the_release_alone(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path, depts()) as con:
        assert con.session.cost_of(JOINED).epsilon == Fraction(1, 10)
        text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {JOINED}").fetchall())
        assert con.session.ledger_entries() == []
    assert "Public table depts as __dpsql_public_0: read exactly" in text
    assert "Cost: epsilon 0.1, delta 0" in text


@pytest.mark.parametrize("sql", [
    # private rows beside released results
    f"SELECT p.age, t.n FROM people p JOIN ({RELEASE}) t ON p.dept = t.dept",
    # a row-level relation over the private table, named like the public table
    f"WITH depts AS (SELECT dept AS name, age FROM people) SELECT d.age, t.n FROM depts d JOIN ({RELEASE}) t "
    "ON d.name = t.dept",
    # a private table under the default schema's name
    f'SELECT p.age, t.n FROM "public"."people" p JOIN ({RELEASE}) t ON p.dept = t.dept',
])
def test_private_neighbours_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path, sql: str) -> None:
    with connect(people, policy_path, depts()) as con:
        with pytest.raises(Error) as refused:
            con.execute(sql)
        assert refused.value.code == "DP126"
        assert con.session.ledger_entries() == []


def test_a_public_table_over_the_cap_is_refused_uncharged(people: pd.DataFrame, policy_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(public_inputs, "MAX_PUBLIC_ROWS", len(DEPTS) - 1)
    with connect(people, policy_path, depts()) as con:
        with pytest.raises(Error) as refused:
            con.execute(JOINED)
        assert refused.value.code == "DP129"
        assert con.session.ledger_entries() == []
    # Control: at the table's size it is answered.
    monkeypatch.setattr(public_inputs, "MAX_PUBLIC_ROWS", len(DEPTS))
    with connect(people, policy_path, depts()) as con:
        assert len(con.execute(JOINED).fetchall()) == len(DEPTS)
