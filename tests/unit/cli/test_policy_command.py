"""`dpsql policy init` and `dpsql policy check`: a skeleton a data owner can load after review,
no data values without the explicit opt-in, and a readable account of what a policy allows."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dpsql.catalog.loader import load_policy
from dpsql.catalog.scaffold import round_outward
from dpsql.cli import main


@pytest.fixture()
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "people.parquet"
    con = duckdb.connect()
    con.execute("CREATE TABLE p AS SELECT range AS person_id, 18 + range % 70 AS age, range * 1.5 + 0.25 AS income, "
                "'r' || (range % 5) AS region, DATE '2020-01-01' + (range % 300)::INT AS day, TIMESTAMP '2020-01-01 00:00:00' + to_seconds(range) AS seen, "
                "[1, 2] AS tags FROM range(1000)")
    con.execute(f"COPY p TO '{path}'")
    return path


def test_init_writes_a_loadable_skeleton_without_data_values(parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "policy.toml"
    assert main(["policy", "init", str(parquet), "-o", str(out)]) == 0
    text = out.read_text()
    assert 'privacy_unit = "person_id"' in text and 'source = "people.parquet"' in text
    assert "1498.75" not in text and "87" not in text  # neither the data's max nor any value
    assert "# tags: engine type INTEGER[] has no policy type" in text
    policy = load_policy(out)
    people = policy.table("people")
    assert people is not None and people.column("income").type == "float" and not people.column("income").bounded
    assert people.column("day").type == "date"
    assert people.column("seen").type == "timestamp" and not people.column("seen").bounded
    assert "seen = { type = \"timestamp\" }  # TODO: lower = 2000-01-01T00:00:00" in text


def test_init_refuses_to_overwrite(parquet: Path, tmp_path: Path) -> None:
    out = tmp_path / "policy.toml"
    out.write_text("keep me")
    assert main(["policy", "init", str(parquet), "-o", str(out)]) == 1
    assert out.read_text() == "keep me"


def test_suggested_bounds_contain_the_data_rounded_outward_and_warn(parquet: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "policy.toml"
    assert main(["policy", "init", str(parquet), "-o", str(out), "--suggest-bounds"]) == 0
    assert "disclosure" in capsys.readouterr().err
    income = load_policy(out).table("people").column("income")
    assert income.lower == 0 and income.upper == 2000  # [0.25, 1498.75] widened to multiples of 1000


@pytest.mark.parametrize(("low", "high", "expected"), [
    (18, 87, (10, 90)), (0.25, 1498.75, (0, 2000)), (-3.5, 2.0, (-4, 2)), (0, 0, (0, 0)), (-120000, 5, (-200000, 100000)),
])
def test_round_outward(low: float, high: float, expected: tuple[float, float]) -> None:
    assert round_outward(low, high) == expected


def test_check_describes_what_each_column_allows(parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "policy.toml"
    main(["policy", "init", str(parquet), "-o", str(out), "--suggest-bounds"])
    capsys.readouterr()
    assert main(["policy", "check", str(out), "--data"]) == 0
    text = capsys.readouterr().out
    assert "analysts: none declared, so `dpsql serve` has nobody to let in" in text
    assert "income     float [0, 2000]: COUNT, SUM, AVG, MEDIAN/QUANTILE/IQR" in text
    assert "region     text: COUNT, GROUP BY (keys chosen by partition selection: needs delta > 0)" in text
    assert "data: every declared column was found in its source" in text


def test_check_with_data_finds_a_missing_column(parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "policy.toml"
    main(["policy", "init", str(parquet), "-o", str(out)])
    out.write_text(out.read_text().replace('day = { type = "date" }', 'day = { type = "date" }\nmissing = { type = "int" }'))
    capsys.readouterr()
    assert main(["policy", "check", str(out), "--data"]) == 1
    assert "DP002" in capsys.readouterr().err


def test_check_reports_an_invalid_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[budget]\nepsilon = 1\n")
    assert main(["policy", "check", str(bad)]) == 1
    assert "DP001" in capsys.readouterr().err


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for command in ("dpsql serve", "dpsql hash-password", "dpsql policy init", "dpsql policy check"):
        assert command in text


# --- a skeleton that fits the data ------------------------------------------------------------------
@pytest.fixture()
def visits(tmp_path: Path) -> Path:
    """5,000 visits of 1,500 patients (3.3 each, at most 4), a bool, a 4-value ward and a rare code."""
    path = tmp_path / "visits.parquet"
    con = duckdb.connect()
    con.execute("CREATE TABLE v AS SELECT 1 + range % 1500 AS patient_id, 20 + range % 60 AS age, range % 7 = 0 AS readmitted, "
                "['cardio', 'ortho', 'neuro', 'onco'][1 + range % 4] AS ward, "
                "CASE WHEN range < 3 THEN 'rare' ELSE 'common' END AS code FROM range(5000)")
    con.execute(f"COPY v TO '{path}'")
    return path


def test_skeleton_keeps_its_budget_and_says_how_many_queries_it_fits(visits: Path, tmp_path: Path) -> None:
    from dpsql.accounting.cost import PrivacyCost
    from dpsql.catalog.scaffold import budget_for, typical_queries

    out = tmp_path / "policy.toml"
    assert main(["policy", "init", str(visits), "-o", str(out)]) == 0
    text = out.read_text()
    policy = load_policy(out)
    assert policy.budget.ledger == str(tmp_path / "policy.ledger.sqlite")  # a ledger line: the budget survives runs
    counts, selections = typical_queries(policy.budget.total)
    assert counts >= 100 and f"fits {counts} COUNT queries" in text and f"or {selections} GROUP BYs" in text
    # Negative control: the next smaller budget on the ladder would not fit 100 (the smallest that does is proposed).
    assert typical_queries(PrivacyCost(policy.budget.total.epsilon - 2, policy.budget.total.delta))[0] < 100
    assert budget_for(10).epsilon == 1
    visits_table = policy.table("visits")
    assert visits_table is not None and visits_table.column("readmitted").values == (False, True)  # bool: public domain
    assert visits_table.column("ward").values is None and "cardio" not in text  # no data read without --suggest
    assert "max_rows = 1              # TODO" in text


def test_suggest_reads_rows_per_person_and_low_cardinality_values(visits: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "policy.toml"
    assert main(["policy", "init", str(visits), "-o", str(out), "--suggest"]) == 0
    assert "disclosure" in capsys.readouterr().err
    text = out.read_text()
    table = load_policy(out).table("visits")
    assert table is not None
    assert table.max_rows == 4 and "keeps 100.0% of rows" in text  # 1,500 patients with 3 or 4 visits
    assert table.column("ward").values == ("cardio", "neuro", "onco", "ortho")
    # Negative control: a value held by 3 persons is not listed (the list would name them): no values for `code`.
    assert table.column("code").values is None and '"rare"' not in text
    assert table.max_groups == 1  # `code`, the text key left to partition selection: 99% of patients have one
    assert text.count("REVIEW") >= 4
    with pytest.raises(SystemExit):  # --queries must be a number
        main(["policy", "init", str(visits), "--queries", "many"])
