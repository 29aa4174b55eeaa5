"""A13: data-dependent selection before the DP aggregate. `ORDER BY income DESC LIMIT 1`, a window
rank, a HAVING or a MAX inside a subquery picks rows by their values before the noisy aggregate
sees them: the selected person changes when one person is added, so the aggregate's sensitivity
is no longer the policy's.

Pass criterion: every such query is refused before the charge and before the engine runs (DP110
subqueries and CTEs, correlated scalar subqueries, DP108 window functions, DP121 DISTINCT, DP105
ordering by a private value; an aggregated subquery is a release of its own, refused by its own
rules, DP109 or DP107, or answered first and read as a constant),
with the same text on D and D'. A top-level HAVING, ORDER BY or LIMIT is post-processing of the
noisy table: it is answered, and every released row satisfies the HAVING on its *released* value
(a filter on the exact value would show as released counts that fail it).
"""

from __future__ import annotations

import pandas as pd
import pytest

import dpsql
from tests.security.attack_support import forbid_engine, with_secret_person, without_person

SELECTING = [
    ("SELECT COUNT(*) FROM (SELECT * FROM people ORDER BY income DESC LIMIT 1)", "DP110"),
    ("SELECT SUM(income) FROM (SELECT income FROM people ORDER BY income DESC LIMIT 10) t", "DP110"),
    ("SELECT COUNT(*) FROM people WHERE person_id = (SELECT person_id FROM people ORDER BY income DESC LIMIT 1)", "DP110"),
    ("SELECT COUNT(*) FROM (SELECT *, row_number() OVER (ORDER BY income DESC) AS r FROM people) WHERE r = 1", "DP110"),
    ("SELECT COUNT(*) FROM (SELECT *, rank() OVER (PARTITION BY dept ORDER BY income) AS r FROM people) WHERE r = 1", "DP110"),
    ("SELECT SUM(s) FROM (SELECT SUM(income) OVER (PARTITION BY person_id) AS s FROM people)", "DP110"),
    # An aggregated subquery is a release of its own (post-processing over released results): its
    # own rules refuse it here (MAX has no mechanism; GROUP BY the privacy unit).
    # (with MAX(income) this is answered now: a noisy MAX per dept, then a filter on released rows)
    ("SELECT COUNT(*) FROM (SELECT dept FROM people GROUP BY dept HAVING BOOL_OR(income > 400000))", "DP109"),
    ("SELECT COUNT(*) FROM (SELECT person_id FROM people GROUP BY person_id HAVING COUNT(*) = 1)", "DP107"),
    ("WITH top AS (SELECT * FROM people ORDER BY income DESC LIMIT 1) SELECT COUNT(*) FROM top", "DP110"),
    # An uncorrelated scalar subquery is a release of its own, answered first: the rows are then
    # selected by a released (noisy) value, a constant (tests/integration/test_scalar_subqueries.py).
    # Correlated, it would select each row by an exact value over other persons' rows: refused.
    ("SELECT COUNT(*) FROM people p WHERE income > (SELECT quantile_cont(q.income, 0.99) FROM people q WHERE q.dept = p.dept)",
     "DP110"),
    ("SELECT COUNT(*) FROM people WHERE income = (SELECT MAX(q.income) FROM people q WHERE q.person_id = people.person_id)",
     "DP110"),
    ("SELECT COUNT(*) FROM people WHERE EXISTS (SELECT 1 FROM people q WHERE q.income > 499000)", "DP138"),
    ("SELECT COUNT(*) FROM people QUALIFY row_number() OVER (ORDER BY income) = 1", "DP108"),
    ("SELECT COUNT(*) FROM people WHERE income > max(income) OVER ()", "DP108"),
    ("SELECT COUNT(*) OVER () FROM people", "DP108"),
    # DISTINCT over one aggregated row is a no-op (answered as the COUNT); merging noisy groups is not
    ("SELECT DISTINCT COUNT(*) FROM people GROUP BY dept", "DP121"),
    ("SELECT COUNT(*) FROM people ORDER BY income LIMIT 1", "DP105"),
]


@pytest.fixture
def neighbours(people_frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    d = with_secret_person(people_frame, income=499999.0)  # the top earner, whom the selections pick
    return {"D": d, "D2": without_person(d)}


@pytest.mark.parametrize(("sql", "code"), SELECTING, ids=[c + ":" + s[22:60] for s, c in SELECTING])
def test_a13_selection_before_the_aggregate_is_refused(connect, neighbours, monkeypatch, sql: str, code: str) -> None:
    texts = []
    for name in ("D", "D2"):
        con = connect(tables={"people": neighbours[name]}, random_seed=1)
        calls = forbid_engine(con, monkeypatch)
        with pytest.raises(dpsql.ProgrammingError) as info:
            con.execute(sql)
        assert info.value.code == code, str(info.value)
        assert con.ledger() == [] and calls == []
        texts.append(str(info.value))
    assert texts[0] == texts[1]


def test_a13_top_level_having_filters_released_values_only(connect, policy_file, neighbours) -> None:
    # epsilon 0.05: noise of scale 60 on counts of about 100 per department, so a HAVING decided on
    # exact counts would often release a count below the threshold.
    con = connect(policy_file(epsilon=100), tables={"people": neighbours["D"]}, random_seed=2)
    sql = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.05) dept, COUNT(*) AS n FROM people "
           "GROUP BY dept HAVING COUNT(*) > 100 ORDER BY n DESC LIMIT 5")
    kept = set()
    for _ in range(30):
        rows = con.execute(sql).fetchall()
        assert len(rows) <= 5 and all(n > 100 for _, n in rows), rows
        assert [n for _, n in rows] == sorted((n for _, n in rows), reverse=True)
        kept.add(frozenset(d for d, _ in rows))
    assert len(kept) > 1  # which departments pass depends on the noise, not on the exact counts alone
