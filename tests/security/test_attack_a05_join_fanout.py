"""A5: join fan-out. A self-join on the privacy unit, a foreign-key chain, `UNION ALL` of a table
with itself, or `FROM t, t` multiplies one person's rows: a person with k rows moves a self-join
COUNT by k^2, past the sensitivity (max_rows) the noise is calibrated for.

Pass criterion: every such query is refused before the charge and before the engine is reached,
with a stable code and the same text whatever the data (DP137 a private table read twice, DP135
a cross join, DP126 a UNION ALL of private rows, DP110 LATERAL and joined CTEs, DP138 an IN or
EXISTS subquery over other persons' rows); or,
for the one join dpsql accepts here (two private tables on their privacy unit), the sensitivity
reflects the multiplicity: the plan's COUNT(*) sensitivity is the product of the two tables'
max_rows, and the bare join moves by no more than that when one person is removed. The control
shows the attack is real: the same self-join run bare on the engine moves by k^2 = 9 when one
person with 3 rows is added, three times the COUNT's sensitivity.
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

import dpsql
from tests.security.attack_support import (
    forbid_engine,
    with_secret_person,
    without_person,
)

VISITS = """
[tables.visits]
privacy_unit = "person_id"
max_rows = 3

[tables.visits.columns]
person_id = { type = "int" }
site = { type = "text" }
"""

FANOUT = [
    ("SELECT COUNT(*) FROM people a JOIN people b ON a.person_id = b.person_id", "DP137"),
    ("SELECT COUNT(*) FROM people a JOIN people b ON a.dept = b.dept", "DP137"),
    ("SELECT COUNT(*) FROM people, people", "DP137"),
    ("SELECT COUNT(*) FROM people a, people b WHERE a.person_id = b.person_id", "DP137"),
    ("SELECT COUNT(*) FROM people CROSS JOIN people", "DP137"),
    ("SELECT COUNT(*) FROM people p, visits v", "DP135"),
    ("SELECT COUNT(*) FROM people p CROSS JOIN visits v", "DP135"),
    ("SELECT COUNT(*) FROM people p JOIN visits v USING (person_id) JOIN visits w USING (person_id)", "DP137"),
    ("SELECT COUNT(*) FROM (SELECT * FROM people UNION ALL SELECT * FROM people) t", "DP126"),
    ("SELECT SUM(age) FROM (SELECT age FROM people UNION ALL SELECT age FROM people)", "DP126"),
    # a row-level CTE joined to itself is inlined to people joined to itself: refused as the self-join it is
    ("WITH t AS (SELECT * FROM people) SELECT COUNT(*) FROM t a JOIN t b ON a.person_id = b.person_id", "DP137"),
    # IN and EXISTS over a private table test the same person's rows only (a semi-join adds no rows);
    # over other persons' rows they are refused
    ("SELECT COUNT(*) FROM people WHERE dept IN (SELECT site FROM visits)", "DP138"),
    ("SELECT COUNT(*) FROM people p WHERE NOT EXISTS (SELECT 1 FROM visits v WHERE v.site = p.dept)", "DP138"),
    ("SELECT COUNT(*) FROM people p, LATERAL (SELECT * FROM visits v WHERE v.person_id = p.person_id)", "DP110"),
]
UNIT_JOIN = "SELECT COUNT(*) FROM people p JOIN visits v ON p.person_id = v.person_id"


@pytest.fixture
def frames(people_frame: pd.DataFrame) -> dict[str, dict[str, pd.DataFrame]]:
    d = with_secret_person(people_frame, rows=3)
    visits = pd.DataFrame({"person_id": d["person_id"], "site": "a"})
    return {"D": {"people": d, "visits": visits},
            "D2": {"people": without_person(d), "visits": without_person(visits)}}


@pytest.mark.parametrize(("sql", "code"), FANOUT)
def test_a05_fan_out_is_refused_before_the_charge(connect, policy_file, frames, monkeypatch, sql: str, code: str) -> None:
    policy = policy_file(extra=VISITS)
    texts = []
    for name in ("D", "D2"):
        con = connect(policy, tables=frames[name], random_seed=1)
        calls = forbid_engine(con, monkeypatch)
        with pytest.raises(dpsql.ProgrammingError) as info:
            con.execute(sql)
        assert info.value.code == code, str(info.value)
        assert con.ledger() == [] and calls == []
        texts.append(str(info.value))
    assert texts[0] == texts[1]


def test_a05_union_all_of_aggregates_is_charged_per_branch(connect, policy_file, frames) -> None:
    con = connect(policy_file(accountant="basic", extra=VISITS), tables=frames["D"], random_seed=1)
    con.execute("SELECT COUNT(*) FROM people UNION ALL SELECT COUNT(*) FROM people").fetchall()
    (entry,) = con.ledger()
    assert entry.cost.epsilon == 2 * con.session.default_query_budget.epsilon


def test_a05_control_a_bare_self_join_moves_by_k_squared(frames) -> None:
    counts = {}
    for name in ("D", "D2"):
        with duckdb.connect() as con:
            con.register("people", frames[name]["people"])
            counts[name] = con.execute("SELECT COUNT(*) FROM people a JOIN people b ON a.person_id = b.person_id").fetchone()[0]
    assert counts["D"] - counts["D2"] == 9 > 3  # 3 rows -> 3 x 3 pairs; COUNT(*)'s sensitivity is max_rows = 3


def test_a05_the_unit_join_sensitivity_covers_the_multiplicity(connect, policy_file, frames) -> None:
    # people (max_rows 3) JOIN visits (max_rows 3) on the unit: a person's joined rows are at most
    # 3 x 3 = 9, and the plan's COUNT(*) sensitivity says 9 (not people's 3). On the data, the
    # secret person's 3 + 3 rows give 9 pairs: the bare join moves by exactly the stated bound.
    con = connect(policy_file(extra=VISITS), tables=frames["D"], random_seed=1)
    plan = "\n".join(row[0] for row in con.execute("EXPLAIN " + UNIT_JOIN).fetchall())
    assert "Joined rows per person: at most 3 x 3 = 9" in plan and "sensitivity 9," in plan, plan
    counts = {}
    for name in ("D", "D2"):
        with duckdb.connect() as raw:
            raw.register("people", frames[name]["people"])
            raw.register("visits", frames[name]["visits"])
            counts[name] = raw.execute(UNIT_JOIN).fetchone()[0]
    assert 3 < counts["D"] - counts["D2"] <= 9  # past people's own max_rows, within the join's
