"""The SQLAlchemy dialect `dpsql://` over the DB-API: URLs, reflection from the policy, Core,
text() and pandas.read_sql queries, refusals, the budget, the demo URL and jupysql's `%sql`.

Noise is seeded through `connect_args={"random_seed": ...}` (tests only), and every accuracy
check leaves a margin of many noise scales.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import types as sa_types

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import DEPTS, generate_people, policy_text
from dpsql.sqlalchemy.dialect import DpsqlDialect

ROWS = 2000
EXTRA_TABLE = """
[tables.calendar]                 # a public table, to reflect the bool and date types
public = true
source = "calendar.csv"

[tables.calendar.columns]
day     = { type = "date" }
holiday = { type = "bool" }
rate    = { type = "float", lower = 0, upper = 1 }
"""
EXPECTED_COLUMNS = {
    "people": [
        ("person_id", sa_types.BIGINT),
        ("age", sa_types.BIGINT),
        ("income", sa_types.DOUBLE),
        ("dept", sa_types.VARCHAR),
        ("region", sa_types.VARCHAR),
    ],
    "calendar": [("day", sa_types.DATE), ("holiday", sa_types.BOOLEAN), ("rate", sa_types.DOUBLE)],
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """people.parquet (generate_people(2000)), calendar.csv and the demo policy plus `calendar`."""
    directory = tmp_path_factory.mktemp("sqlalchemy")
    write_parquet(generate_people(ROWS), directory / "people.parquet")
    (directory / "calendar.csv").write_text("day,holiday,rate\n2026-01-01,true,0.5\n2026-01-02,false,0.25\n", encoding="utf-8")
    (directory / "policy.toml").write_text(policy_text("people.parquet") + EXTRA_TABLE, encoding="utf-8")
    return directory


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


@pytest.fixture
def engine(data_dir: Path, ledger: Path):
    url = f"dpsql:///?policy={data_dir / 'policy.toml'}&analyst=alice&ledger={ledger}"
    eng = sa.create_engine(url, connect_args={"random_seed": 11})
    yield eng
    eng.dispose()


def people_table(eng: sa.Engine) -> sa.Table:
    return sa.Table("people", sa.MetaData(), autoload_with=eng)


# --- URL and registration ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("dpsql://", {}),
        ("dpsql:///", {}),
        ("dpsql:///?policy=p.toml", {"policy": "p.toml"}),
        ("dpsql:///data.duckdb?policy=p.toml", {"database": "data.duckdb", "policy": "p.toml"}),
        (
            "dpsql:////abs/dir/data.duckdb?policy=/abs/p.toml&analyst=alice&ledger=/abs/l.sqlite",
            {"database": "/abs/dir/data.duckdb", "policy": "/abs/p.toml", "analyst": "alice", "ledger": "/abs/l.sqlite"},
        ),
        ("dpsql+dpsql:///d.duckdb?analyst=bob&policy=p.toml", {"database": "d.duckdb", "policy": "p.toml", "analyst": "bob"}),
    ],
)
def test_url_maps_to_connect_arguments(url: str, expected: dict[str, str]) -> None:
    args, kwargs = DpsqlDialect().create_connect_args(sa.make_url(url))
    assert args == []
    assert kwargs == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("dpsql:///?policy=p.toml&epsilon=1", "unknown dpsql URL parameter"),
        ("dpsql:///?policy=p.toml&random_seed=1", "unknown dpsql URL parameter"),
        ("dpsql://somehost/data.duckdb?policy=p.toml", "no host"),
        ("dpsql://alice@/data.duckdb?policy=p.toml", "no host"),
        ("dpsql:///?policy=a.toml&policy=b.toml", "more than once"),
    ],
)
def test_bad_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(sa_exc.ArgumentError, match=message):
        DpsqlDialect().create_connect_args(sa.make_url(url))


def test_entry_point_registers_the_dialect(engine: sa.Engine) -> None:
    names = {ep.name: ep.value for ep in entry_points(group="sqlalchemy.dialects")}
    assert names.get("dpsql") == "dpsql.sqlalchemy.dialect:DpsqlDialect"
    assert sa.make_url("dpsql://").get_dialect() is DpsqlDialect
    assert sa.make_url("dpsql+dpsql://").get_dialect() is DpsqlDialect
    dialect = engine.dialect
    assert isinstance(dialect, DpsqlDialect)
    assert (dialect.name, dialect.driver, dialect.paramstyle) == ("dpsql", "dpsql", "qmark")
    assert dialect.dbapi is dpsql
    assert dialect.supports_statement_cache


def test_dpsql_imports_without_sqlalchemy(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["sqlalchemy"] = None  # any `import sqlalchemy` now raises ImportError
        import dpsql
        con = dpsql.connect(policy=sys.argv[1], tables={"people": dpsql.demo.people.generate_people(10)})
        assert con.execute("SELECT COUNT(*) FROM people").fetchall()
        assert all(sys.modules[name] is None for name in sys.modules if name.split(".")[0] == "sqlalchemy")
        try:
            import dpsql.sqlalchemy
        except ImportError:
            print("ok")
        """
    )
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_text(None), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", code, str(policy)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --- reflection -----------------------------------------------------------------------------


def test_inspector_reflects_the_policy_exactly(engine: sa.Engine) -> None:
    inspector = sa.inspect(engine)
    assert inspector.get_schema_names() == ["main"]
    assert inspector.default_schema_name == "main"
    assert inspector.get_table_names() == ["people", "calendar"]
    assert inspector.get_view_names() == []
    assert inspector.has_table("people") and inspector.has_table("calendar")
    assert not inspector.has_table("salaries")
    assert not inspector.has_table("people", schema="other")
    for table, expected in EXPECTED_COLUMNS.items():
        columns = inspector.get_columns(table)
        assert [(c["name"], type(c["type"])) for c in columns] == expected
        assert all(c["nullable"] is True for c in columns)
        assert inspector.get_pk_constraint(table)["constrained_columns"] == []
        assert inspector.get_foreign_keys(table) == []
        assert inspector.get_indexes(table) == []
        assert inspector.get_unique_constraints(table) == []
    comments = {c["name"]: c["comment"] for c in inspector.get_columns("people")}
    assert comments["age"] == "bounds [18, 90]"
    assert comments["dept"] == f"public domain of {len(DEPTS)} values"
    assert "privacy unit person_id" in inspector.get_table_comment("people")["text"]
    assert inspector.get_table_comment("calendar")["text"].startswith("public table")
    with pytest.raises(sa_exc.NoSuchTableError):
        inspector.get_columns("salaries")


def test_metadata_reflect_builds_tables(engine: sa.Engine) -> None:
    metadata = sa.MetaData()
    metadata.reflect(engine)
    assert sorted(metadata.tables) == ["calendar", "people"]
    assert [c.name for c in metadata.tables["people"].columns] == [name for name, _ in EXPECTED_COLUMNS["people"]]
    assert isinstance(metadata.tables["calendar"].c.holiday.type, sa_types.BOOLEAN)


def test_reflection_spends_no_budget(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        before = conn.connection.dbapi_connection.budget
        sa.inspect(conn).get_columns("people")
        sa.Table("people", sa.MetaData(), autoload_with=conn)
        assert conn.connection.dbapi_connection.budget == before
        assert conn.connection.dbapi_connection.ledger() == []


# --- statements -----------------------------------------------------------------------------


def test_core_count_select_from(engine: sa.Engine) -> None:
    people = people_table(engine)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(people)).all()
    assert len(rows) == 1 and len(rows[0]) == 1
    assert abs(rows[0][0] - ROWS) < 500  # scale 30 (max_rows 3 / epsilon 0.1)


def test_core_group_by_with_bound_where(engine: sa.Engine) -> None:
    people = people_table(engine)
    query = (
        sa.select(people.c.dept, sa.func.count().label("n"), sa.func.avg(people.c.income).label("mean_income"))
        .where(people.c.age > 40, people.c.dept.in_(["sales", "hr"]))
        .group_by(people.c.dept)
        .order_by(people.c.dept)
    )
    compiled = str(query.compile(engine))
    assert "people.age > ?" in compiled and "GROUP BY people.dept" in compiled
    with engine.connect() as conn:
        result = conn.execute(query)
        assert list(result.keys()) == ["dept", "n", "mean_income"]
        rows = result.all()
    assert [r[0] for r in rows] == sorted(DEPTS)  # a public domain: every key released, in order
    assert all(0 <= r[2] <= 500_000 for r in rows)


def test_limit_and_offset_compile_to_literals(engine: sa.Engine) -> None:
    people = people_table(engine)
    query = sa.select(people.c.dept, sa.func.count().label("n")).group_by(people.c.dept).order_by(people.c.dept).limit(3).offset(2)
    with engine.connect() as conn:
        result = conn.execute(query)
        rows = result.all()
        assert [r[0] for r in rows] == sorted(DEPTS)[2:5]
        rendered = result.context.statement  # the SQL dpsql received
    assert "LIMIT 3" in rendered and "OFFSET 2" in rendered and "?" not in rendered


def test_float_casts_render_as_double(engine: sa.Engine) -> None:
    people = people_table(engine)
    query = sa.select(sa.func.count()).where(sa.cast(people.c.age, sa.Float) / 2 > 10.5)
    assert "CAST(people.age AS DOUBLE)" in str(query.compile(engine))
    with engine.connect() as conn:
        assert abs(conn.execute(query).scalar_one() - ROWS) < 500  # every age is at least 18


def test_text_query_with_named_parameters(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT dept, COUNT(*) AS n FROM people WHERE age BETWEEN :low AND :high GROUP BY dept"),
            {"low": 18, "high": 90},
        ).all()
    assert {r[0] for r in rows} == set(DEPTS)


def test_pandas_read_sql(engine: sa.Engine) -> None:
    frame = pd.read_sql("SELECT dept, COUNT(*) FROM people GROUP BY dept", engine)
    assert frame.shape == (len(DEPTS), 2)
    assert frame.columns[0] == "dept"
    assert set(frame["dept"]) == set(DEPTS)
    assert abs(frame.iloc[:, 1].sum() - ROWS) < 12 * 500
    counted = pd.read_sql(sa.select(sa.func.count().label("n")).select_from(people_table(engine)), engine)
    assert list(counted.columns) == ["n"] and counted.shape == (1, 1)
    with_params = pd.read_sql("SELECT COUNT(*) AS n FROM people WHERE age > ?", engine, params=(40,))
    assert with_params.shape == (1, 1)


def test_refusal_raises_a_wrapped_dpsql_error(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        before = conn.connection.dbapi_connection.budget
        with pytest.raises(sa_exc.DBAPIError) as info:
            conn.execute(sa.text("SELECT * FROM people"))
        assert isinstance(info.value, sa_exc.ProgrammingError)
        assert isinstance(info.value.orig, dpsql.UnsupportedQueryError)
        assert "DP104" in str(info.value.orig)
        assert conn.connection.dbapi_connection.budget == before  # refused before any charge
        # the connection stays usable after a refusal
        assert conn.execute(sa.text("SELECT COUNT(*) FROM people")).scalar_one() > 0
    with pytest.raises(pd.errors.DatabaseError) as refused:  # pandas wraps SQLAlchemy's error
        pd.read_sql(sa.select(people_table(engine)), engine)  # every column of every row
    cause = refused.value.__cause__
    assert isinstance(cause, sa_exc.DBAPIError) and isinstance(cause.orig, dpsql.UnsupportedQueryError)


def test_budget_decreases_and_is_kept_in_the_ledger(engine: sa.Engine, data_dir: Path, ledger: Path) -> None:
    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw.session.analyst == "alice"
        epsilon_before, _ = raw.budget
        conn.execute(sa.text("SELECT COUNT(*) FROM people")).all()
        conn.execute(sa.text("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM people")).all()
        epsilon_after, _ = raw.budget
    assert epsilon_before == pytest.approx(10.0)
    assert epsilon_before - epsilon_after == pytest.approx(0.6)
    raw_connection = engine.raw_connection()
    try:
        assert raw_connection.dbapi_connection.budget[0] == pytest.approx(9.4)
    finally:
        raw_connection.close()
    # the ledger file outlives the engine: another engine for alice sees the same spend
    other = sa.create_engine(f"dpsql:///?policy={data_dir / 'policy.toml'}&analyst=alice&ledger={ledger}")
    try:
        with other.connect() as conn:
            assert conn.connection.dbapi_connection.budget[0] == pytest.approx(9.4)
            assert len(conn.connection.dbapi_connection.ledger()) == 2
    finally:
        other.dispose()


def test_transactions_are_no_ops(engine: sa.Engine, data_dir: Path) -> None:
    with engine.begin() as conn:  # commits on exit
        conn.execute(sa.text("SELECT COUNT(*) FROM people")).all()
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT COUNT(*) FROM people")).all()
        conn.rollback()  # must not raise, and refunds nothing
        assert conn.connection.dbapi_connection.budget[0] == pytest.approx(9.8, abs=1e-4)  # two charges of 0.1 (a hair less at the filter's delta share)
        assert conn.get_isolation_level() == "AUTOCOMMIT"
    raw = dpsql.connect(policy=data_dir / "policy.toml")
    with pytest.raises(dpsql.NotSupportedError):  # the DB-API itself still says charges are final
        raw.rollback()
    raw.close()


def test_pre_ping_does_not_send_select_1(data_dir: Path) -> None:
    eng = sa.create_engine(f"dpsql:///?policy={data_dir / 'policy.toml'}", pool_pre_ping=True)
    try:
        for _ in range(2):  # the second checkout pings the pooled connection
            with eng.connect() as conn:
                assert conn.execute(sa.text("SELECT COUNT(*) FROM people")).scalar_one() > 0
    finally:
        eng.dispose()


def test_demo_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPSQL_CACHE_DIR", str(tmp_path / "cache"))
    eng = sa.create_engine("dpsql://")
    try:
        assert sa.inspect(eng).get_table_names() == ["people"]
        with eng.connect() as conn:
            count = conn.execute(sa.text("SELECT COUNT(*) FROM people")).scalar_one()
    finally:
        eng.dispose()
    assert abs(count - 100_000) < 2_000
    assert (tmp_path / "cache").is_dir()


# --- jupysql ----------------------------------------------------------------------------------


def test_jupysql_sql_magic(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    pytest.importorskip("sql.magic")
    code = textwrap.dedent(
        """
        import json, sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "sql")
        shell.run_line_magic("sql", "dpsql:///?policy=" + sys.argv[1])
        total = shell.run_line_magic("sql", "SELECT COUNT(*) AS n FROM people")
        by_dept = shell.run_line_magic("sql", "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept").DataFrame()
        shell.run_line_magic("sql", "dpsql:///?policy=" + sys.argv[1] + "&ci_columns=on")
        with_ci = shell.run_line_magic("sql", "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept").DataFrame()
        print("REPORT", json.dumps({"keys": list(total.keys), "rows": len(list(total)), "n": total[0][0],
                          "depts": sorted(by_dept["dept"]), "ci": list(with_ci.columns)}))
        """
    )
    env = {
        **os.environ,
        "IPYTHONDIR": str(tmp_path / "ipython"),  # no profile or history written to the home directory
        "PLOOMBER_STATS_ENABLED": "false",  # jupysql's telemetry and version check: off, no network
        "PLOOMBER_VERSION_CHECK_DISABLED": "true",
    }
    done = subprocess.run(
        [sys.executable, "-c", code, str(data_dir / "policy.toml")],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert len(lines) == 1, done.stdout[-3000:]
    report: dict[str, Any] = json.loads(lines[0].removeprefix("REPORT "))
    assert report["keys"] == ["n"] and report["rows"] == 1
    assert abs(report["n"] - ROWS) < 500
    assert report["ci"] == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high"]  # interval columns through %sql too
    assert report["depts"] == sorted(DEPTS)


# --- notebooks: interval columns, psycopg placeholders, views ----------------------------------------


def test_read_sql_gets_interval_columns_placeholders_and_views(data_dir: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text((data_dir / "policy.toml").read_text(encoding="utf-8").replace('source = "people.parquet"',
                      f'source = "{data_dir / "people.parquet"}"')
                      + '\n[views.seniors]\nsql = "SELECT dept, age, income FROM people WHERE age >= 60"\n', encoding="utf-8")  # fmt: skip
    engine = sa.create_engine(f"dpsql:///?policy={policy}&ci_columns=on", connect_args={"random_seed": 5})
    try:
        frame = pd.read_sql("SELECT dept, COUNT(*) AS n FROM people WHERE age > %(age)s GROUP BY dept", engine, params={"age": 40})
        assert list(frame.columns) == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high"] and (frame["n_ci95"] > 0).all()
        assert (frame["n_ci_low"] >= 0).all() and (frame["n_ci_high"] == frame["n"] + frame["n_ci95"]).all()
        assert sa.inspect(engine).get_table_names() == ["people", "calendar", "seniors"]
        assert [c["name"] for c in sa.inspect(engine).get_columns("seniors")] == ["dept", "age", "income"]
        seniors = pd.read_sql("SELECT COUNT(*) AS n FROM seniors", engine)
        assert list(seniors.columns) == ["n", "n_ci95", "n_ci_low", "n_ci_high"]
    finally:
        engine.dispose()
    with pytest.raises(sa_exc.ArgumentError):
        sa.create_engine(f"dpsql:///?policy={policy}&ci_columns=maybe").connect()
