"""Views of the policy, column probes and row samples in-process (DB-API, CLI), and the same SHOW
dpsql.* in every door: a view is its table's query (same answer at the same seed, same cost), a
probe is answered with its columns and no rows (uncharged, never looking like an empty table),
a sample is refused in words that say why, and a view that is not a row-level SELECT over the
policy's tables is refused when the policy is opened."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.catalog.loader import load_policy
from dpsql.cli import main
from dpsql.errors import CatalogError, Error
from tests.conftest import make_policy_text

VIEW = '\n[views.seniors]\nsql = "SELECT person_id, dept, income, age // 10 * 10 AS decade FROM people WHERE age >= 60"\n'


@pytest.fixture
def con(tmp_path: Path, people_frame: pd.DataFrame) -> dpsql.Connection:
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(extra=VIEW), encoding="utf-8")
    connection = dpsql.connect(policy=policy, tables={"people": people_frame}, random_seed=7, ledger=":memory:")
    yield connection
    connection.close()


def test_a_view_is_its_tables_query(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(extra=VIEW), encoding="utf-8")
    answers = []
    for sql in ("SELECT dept, COUNT(*) AS n, AVG(income) AS a FROM seniors GROUP BY dept",
                "SELECT dept, COUNT(*) AS n, AVG(income) AS a FROM people WHERE age >= 60 GROUP BY dept"):
        with dpsql.connect(policy=policy, tables={"people": people_frame}, random_seed=11, ledger=":memory:") as con:
            answers.append((con.execute(sql).fetchall(), con.ledger()[-1].cost))
    assert answers[0] == answers[1]  # the same release and the same charge
    with dpsql.connect(policy=policy, tables={"people": people_frame}, random_seed=11, ledger=":memory:") as con:
        keys = [r[0] for r in con.execute("SELECT decade, COUNT(*) FROM public.seniors GROUP BY decade").fetchall()]
        assert 60 in keys and 80 in keys  # a derived column of the view, keys derived from the policy


@pytest.mark.parametrize(("body", "says"), [
    ("SELECT dept, COUNT(*) AS n FROM people GROUP BY dept", "not a row-level SELECT"),
    ("SELECT * FROM people UNION ALL SELECT * FROM people", "one SELECT"),
    ("SELECT * FROM people WHERE age > ?", "parameters"),
    ("SELECT * FROM seniors2", "reads the view"),
    ("SELECT * FROM secrets", "reads no private table"),
])
def test_a_view_that_is_not_row_level_is_refused_at_open(tmp_path: Path, people_frame: pd.DataFrame, body: str, says: str) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(extra=f'\n[views.bad]\nsql = "{body}"\n[views.seniors2]\nsql = "SELECT * FROM people"\n'),
                      encoding="utf-8")  # fmt: skip
    with pytest.raises(CatalogError) as info:
        dpsql.connect(policy=policy, tables={"people": people_frame}, ledger=":memory:")
    assert info.value.code == "DP001" and "views.bad" in info.value.message and says in info.value.message


def test_view_names_are_checked_by_the_loader(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(extra='\n[views.people]\nsql = "SELECT * FROM people"\n'), encoding="utf-8")
    with pytest.raises(CatalogError, match="a table of the policy is already named"):
        load_policy(policy)


def test_probe_answers_columns_without_rows_and_is_free(con: dpsql.Connection) -> None:
    cur = con.execute("SELECT * FROM (SELECT dept, decade FROM seniors WHERE income > 10) AS virtual_table LIMIT 1")
    assert [(d[0], d[1]) for d in cur.description] == [("dept", "VARCHAR"), ("decade", "BIGINT")]
    assert cur.fetchall() == [] and cur.rowcount == -1  # not an empty table: its rows are not available
    assert cur.messages and "not an empty table" in cur.messages[0][1]
    assert con.ledger() == []
    plan = [r[0] for r in con.execute("EXPLAIN SELECT * FROM people LIMIT 0").fetchall()]
    assert plan[1].startswith("Column probe") and plan[-1] == "Cost: epsilon 0, delta 0"


@pytest.mark.parametrize(("sql", "code"), [
    ("SELECT * FROM people", "DP104"),
    ("SELECT person_id, age FROM people ORDER BY person_id LIMIT 100", "DP105"),
    ("SELECT dept FROM seniors LIMIT 2", "DP105"),
])
def test_row_samples_are_refused_in_plain_words(con: dpsql.Connection, sql: str, code: str) -> None:
    with pytest.raises(Error) as info:
        con.execute(sql)
    assert info.value.code == code and "row-level samples are not available under differential privacy" in info.value.message
    assert f"docs/sql-reference.md#{code.lower()}" in (info.value.hint or "")
    assert con.ledger() == []


def test_probe_still_gets_every_statement_check(con: dpsql.Connection) -> None:
    for sql, code in (("SELECT read_csv('x') FROM people LIMIT 1", "DP113"), ("SELECT nope FROM people LIMIT 1", "DP111"),
                      ("SELECT * FROM secrets LIMIT 1", "DP103"),
                      ("SELECT age, row_number() OVER (ORDER BY age) FROM people LIMIT 1", "DP108")):
        with pytest.raises(Error) as info:
            con.execute(sql)
        assert info.value.code == code, sql


def test_cli_answers_show_probe_and_plain_explain(tmp_path: Path, people_frame: pd.DataFrame,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from dpsql.backend.auxiliary.files import write_parquet

    write_parquet(people_frame, tmp_path / "people.parquet")
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(source="people.parquet", extra=VIEW), encoding="utf-8")
    script = ("SHOW dpsql.epsilon; SET dpsql.epsilon = 0.25; SHOW dpsql.epsilon; SHOW dpsql.ci_columns; "
              "SELECT * FROM seniors LIMIT 1; EXPLAIN SELECT COUNT(*) FROM people")
    assert main(["--policy", str(policy), "--ledger", ":memory:", "-c", script]) == 0
    out = capsys.readouterr().out
    assert "dpsql.epsilon\n-------------\n0.1\n" in out and "\n0.25\n" in out and "dpsql.ci_columns" in out
    assert "person_id | dept | income | decade" in out and "not an empty table" in out
    assert "Cost: epsilon 0.25" in out and "Engine SQL" not in out and "__dpsql_" not in out
    assert main(["--policy", str(policy), "--ledger", ":memory:", "-c", "\\d\n\\d seniors"]) == 0
    described = capsys.readouterr().out
    assert "seniors | view" in described and "decade" in described  # the REPL's \d lists views like the catalog


def test_policy_check_shows_iso_dates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.toml"
    text = make_policy_text(extra=VIEW).replace('region    = { type = "text" }',
                                                'region    = { type = "text" }\nhired = { type = "date", lower = 2020-01-01, upper = 2024-12-31 }')
    policy.write_text(text, encoding="utf-8")
    assert main(["policy", "check", str(policy)]) == 0
    out = capsys.readouterr().out
    assert "date [2020-01-01, 2024-12-31]" in out and "737425" not in out
    assert "view seniors: SELECT person_id, dept" in out
    policy.write_text(text + '[views.bad]\nsql = "SELECT dept, COUNT(*) FROM people GROUP BY dept"\n', encoding="utf-8")
    assert main(["policy", "check", str(policy)]) == 1  # a view that is not row-level: DP001 naming it
    assert "views.bad" in capsys.readouterr().err
