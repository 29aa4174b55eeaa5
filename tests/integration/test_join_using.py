"""`USING` is resolved as `ON` is (issue 25: "USING over a renamed column answers another query").

`JOIN (SELECT badge_id AS person_id ...) USING (person_id)` used to join on the real person_id of
the table behind the subquery (the USING name was kept while the subquery was inlined), while the
same join written with ON was refused (DP136). Property: for each pair below, the USING spelling
and the ON spelling get the same verdict: the same refusal code, or the same EXPLAIN join lines
and the same seeded answer.

Negative control: with the USING-to-ON rewrite removed, the renamed-column pairs disagree again
(USING answered, ON refused), which the property test would report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import dpsql
import dpsql.analysis.inline as inline
from tests.golden.test_join_golden import POLICY, tables

PAIRS = [
    # renamed columns: a subquery exposes another column under the privacy unit's name
    ("SELECT COUNT(*) FROM people p JOIN (SELECT badge_id AS person_id FROM badges) b USING (person_id)",
     "SELECT COUNT(*) FROM people p JOIN (SELECT badge_id AS person_id FROM badges) b ON p.person_id = b.person_id"),
    ("SELECT COUNT(*) FROM people p JOIN (SELECT minutes AS person_id, site FROM visits) v USING (person_id)",
     "SELECT COUNT(*) FROM people p JOIN (SELECT minutes AS person_id, site FROM visits) v ON p.person_id = v.person_id"),
    ("SELECT COUNT(*) FROM (SELECT age AS person_id, dept FROM people) p JOIN visits v USING (person_id)",
     "SELECT COUNT(*) FROM (SELECT age AS person_id, dept FROM people) p JOIN visits v ON p.person_id = v.person_id"),
    ("SELECT COUNT(*) FROM people p JOIN (SELECT person_id AS pid FROM visits) v USING (person_id)",
     "SELECT COUNT(*) FROM people p JOIN (SELECT person_id AS pid FROM visits) v ON p.person_id = v.person_id"),
    # the same column under its own name: answered both ways
    ("SELECT COUNT(*) FROM people p JOIN (SELECT person_id, site FROM visits) v USING (person_id)",
     "SELECT COUNT(*) FROM people p JOIN (SELECT person_id, site FROM visits) v ON p.person_id = v.person_id"),
    ("SELECT site, COUNT(*) AS n FROM (SELECT person_id, dept FROM people WHERE age > 20) p JOIN visits v USING (person_id) "
     "GROUP BY site",
     "SELECT site, COUNT(*) AS n FROM (SELECT person_id, dept FROM people WHERE age > 20) p JOIN visits v "
     "ON p.person_id = v.person_id GROUP BY site"),
    ("SELECT COUNT(*) FROM people p LEFT JOIN (SELECT person_id, site FROM visits) v USING (person_id)",
     "SELECT COUNT(*) FROM people p LEFT JOIN (SELECT person_id, site FROM visits) v ON p.person_id = v.person_id"),
    # a public join through a renamed column
    ("SELECT COUNT(*) FROM (SELECT person_id, dept AS name FROM people) p JOIN depts USING (name)",
     "SELECT COUNT(*) FROM (SELECT person_id, dept AS name FROM people) p JOIN depts ON p.name = depts.name"),
]
RENAMED = PAIRS[:3]


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


@pytest.fixture
def verdict(policy: Path) -> Iterator:
    def run(sql: str) -> tuple[str, ...]:
        """The refusal code, or the EXPLAIN join lines and the seeded answer."""
        with dpsql.connect(policy=str(policy), tables=tables(), random_seed=5) as con:
            try:
                lines = [row[0] for row in con.execute("EXPLAIN " + sql).fetchall()]
                rows = con.execute(sql).fetchall()
            except dpsql.Error as error:
                return (str(error.code),)
        joins = tuple(line.strip() for line in lines if line.strip().startswith(("Join ", "Scan ", "Joined rows")))
        return ("answered", *joins, repr(sorted(rows, key=repr)))

    yield run


@pytest.mark.parametrize(("using", "on"), PAIRS)
def test_using_and_on_get_the_same_verdict(verdict, using: str, on: str) -> None:
    assert verdict(using) == verdict(on)


def test_the_renamed_unit_is_refused_as_with_on(verdict) -> None:
    assert [verdict(using)[0] for using, _ in RENAMED] == ["DP136"] * 3


def test_negative_control_without_the_rewrite_using_joins_on_the_real_column(verdict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inline, "_using_as_on", lambda joins, exposed, sql: {})
    disagreements = [(verdict(using)[0], verdict(on)[0]) for using, on in RENAMED]
    assert ("answered", "DP136") in disagreements  # the property test would fail on this build
