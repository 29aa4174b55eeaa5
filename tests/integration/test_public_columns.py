"""A public table declared without [columns] takes its source's columns when the session opens
(issue 30, item 12; docs/policy-reference.md): joins and public-only queries read them, and a
source that cannot be read says what is missing (DP002) instead of failing in the engine."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql

POLICY = """
[budget]
epsilon = 100.0
delta = 1e-5
default_query_epsilon = 1.0
default_query_delta = 1e-7

[tables.people]
privacy_unit = "person_id"
[tables.people.columns]
person_id = { type = "int" }
state = { type = "text" }

[tables.states]
public = true
"""


def tables() -> dict[str, pd.DataFrame]:
    return {
        "people": pd.DataFrame({"person_id": range(1, 41), "state": ["CA", "NY", "TX", "WA"] * 10}),
        "states": pd.DataFrame({"code": ["CA", "NY", "TX", "WA"], "region": ["West", "East", "South", "West"],
                                "area": [423967.0, 141297.0, 695662.0, 184661.0], "seats": [52, 26, 38, 10]}),
    }


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def test_the_columns_and_types_come_from_the_source(policy: Path) -> None:
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=1) as con:
        states = con.session.policy.table("states")
        assert states is not None
        assert {n: c.type for n, c in states.columns.items()} == {"code": "text", "region": "text", "area": "float", "seats": "int"}


def test_a_public_only_query_is_answered_exactly(policy: Path) -> None:
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=1) as con:
        rows = con.execute('SELECT "public"."states"."region" AS region, COUNT(*) AS n FROM "public"."states" '
                           'GROUP BY "public"."states"."region" ORDER BY 1').fetchall()
        assert rows == [("East", 1), ("South", 1), ("West", 2)]
        assert con.ledger() == []


def test_a_join_reads_the_public_domain_of_a_source_column(policy: Path) -> None:
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=1) as con:
        rows = con.execute("SELECT s.region, COUNT(*) FROM people p LEFT JOIN states s ON p.state = s.code GROUP BY s.region").fetchall()
        assert sorted(r[0] for r in rows) == ["East", "South", "West"]  # every region of the public table, a public domain


def test_a_source_that_cannot_be_read_says_what_is_missing(policy: Path) -> None:
    data = tables()
    del data["states"]
    with dpsql.connect(policy=str(policy), tables=data, random_seed=1) as con:
        for sql in ("SELECT COUNT(*) FROM states", "SELECT COUNT(*) FROM people p JOIN states s ON p.state = s.code"):
            with pytest.raises(dpsql.Error) as info:
                con.execute(sql)
            assert info.value.code == "DP002"
            assert "declares no columns" in str(info.value) and "[tables.states.columns]" in str(info.value)
        assert con.ledger() == []
