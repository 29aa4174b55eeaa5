"""Dry runs check the statement that will run after the charge, over empty stand-ins of the
session relations (backend/engines/engine.py Engine.dry_run). On DuckDB the statement's own text
runs in a database that holds empty tables and nothing else (backend/engines/dry_duckdb.py);
the general path (Spark, joins) renders it again over stand-ins (backend/sql/engine_dialects.py
render(relations=...)): the text differs from the real one only in the relations it reads. A
statement that reads any other session relation is refused before anything runs (fail closed);
a query-only error is still refused (DP123) before the charge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlglot import exp

import dpsql
from dpsql.backend.engines.dry_duckdb import DryDatabase
from dpsql.backend.engines.engine import bounded_name, empty_keyed_name, empty_name, keyed_name, reference_relations, source_name
from dpsql.backend.sql.engine_dialects import UnknownRelation, render
from dpsql.backend.sql.plan_sql import TYPE_NAMES
from dpsql.catalog.policy import COLUMN_TYPES
from dpsql.errors import EngineError, UnsupportedQueryError
from dpsql.execution.compiled import CompiledQuery

GROUPED = "SELECT dept, COUNT(*), AVG(income) FROM people WHERE age > 30 GROUP BY dept"
SELECTED = "SELECT region, COUNT(*) FROM people GROUP BY region"  # partition selection over the keyed relation
ROBUST = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7) MEDIAN(income), MODE(dept) FROM people"


def compiled_of(con: dpsql.Connection, sql: str) -> CompiledQuery:
    compiled = con.session.compile(sql).compiled
    assert isinstance(compiled, CompiledQuery)
    return compiled


def test_the_dry_text_is_the_real_text_over_empty_relations(connect: Callable[..., dpsql.Connection]) -> None:
    con = connect()
    for sql in (GROUPED, SELECTED):
        compiled = compiled_of(con, sql)
        table = compiled.plan.query.table
        real = render(compiled.engine, "duckdb")
        relation = keyed_name(table, compiled.keyed_columns) if compiled.keyed_columns else bounded_name(table)
        stand_in = empty_keyed_name(table) if compiled.keyed_columns else empty_name(table)
        dry = render(compiled.engine, "duckdb", {relation: stand_in})
        assert f'"{relation}"' in real and f'"{relation}"' not in dry
        assert dry == real.replace(f'"{relation}"', f'"{stand_in}"')
        # ... and the statement built over the stand-in from the plan renders the same text.
        assert dry == render(compiled.dry_run_engine, "duckdb")


def test_a_statement_reading_another_session_relation_is_refused_before_it_runs(connect: Callable[..., dpsql.Connection],
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    con = connect()
    compiled = compiled_of(con, GROUPED)
    table = compiled.plan.query.table
    engine = con.session.engine
    ran: list[str] = []
    dry: list[str] = []
    check, dry_check = engine.backend.check, engine._dry.check
    monkeypatch.setattr(engine.backend, "check", lambda sql, params=None: ran.append(sql) or check(sql, params))
    monkeypatch.setattr(engine._dry, "check", lambda sql, params=None: dry.append(sql) or dry_check(sql, params))
    engine.dry_run(table, compiled.engine)  # the bounded relation: its text as it runs, in the dry-run database
    assert dry == [render(compiled.engine, "duckdb")] and bounded_name(table) in dry[0]
    assert ran == []  # never on the session's connection, where the data is
    engine._empty(table)  # the general path's stand-ins (a LIMIT 0 probe of the source view's schema)
    ran.clear()
    dry.clear()
    sources = exp.select(exp.Count(this=exp.Star())).from_(exp.to_identifier(source_name(table), quoted=True))
    keyed = exp.select(exp.Count(this=exp.Star())).from_(exp.to_identifier(keyed_name(table, ("dept",)), quoted=True))
    qualified = exp.select(exp.Count(this=exp.Star())).from_(exp.table_("people", db="main"))
    for select in (sources, keyed, qualified):  # the keyed relation of keys the dry run was not told about, too
        with pytest.raises(EngineError, match="no empty stand-in"):
            engine.dry_run(table, select)
    assert ran == [] and dry == []  # nothing reached either engine
    with pytest.raises(UnknownRelation):
        render(sources, "duckdb", {bounded_name(table): empty_name(table)})


def test_the_dry_run_database_holds_empty_tables_only(connect: Callable[..., dpsql.Connection]) -> None:
    # After queries that built the bounded and keyed relations, the dry-run database still holds
    # nothing but empty tables named as the session relations, with the session's schemas.
    con = connect()
    for sql in (GROUPED, SELECTED, ROBUST):
        con.execute(sql)
    engine = con.session.engine
    dry = engine._dry._connection()
    tables = dry.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema()").fetchall()
    names = sorted(name for (name,) in tables)
    table = con.session.policy.table("people")
    assert table is not None and bounded_name(table) in names
    assert any(name.startswith("__dpsql_keyed_people") for name in names)
    for name in names:
        assert dry.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone() == (0,)
        real = engine.backend.connection.execute(f'DESCRIBE "{name}"').fetchall()
        assert [(r[0], r[1]) for r in dry.execute(f'DESCRIBE "{name}"').fetchall()] == [(r[0], r[1]) for r in real]
    # Negative control: the session's own relations do hold rows (the comparison above can fail).
    assert engine.backend.connection.execute(f'SELECT COUNT(*) FROM "{bounded_name(table)}"').fetchone()[0] > 0


def test_every_policy_type_has_the_same_schema_in_both_databases(connect: Callable[..., dpsql.Connection]) -> None:
    # The dry-run database's stand-ins are built from the policy (reference_relations): each column
    # type gets the type the session's typed source view gives it.
    con = connect()
    engine = con.session.engine
    table = con.session.policy.table("people")
    assert table is not None
    assert {c.type for c in table.columns.values()} >= {"int", "float", "text"}
    stand_in = engine._empty(table)
    dry = DryDatabase()
    try:
        dry.ensure({"t": reference_relations(table)[empty_name(table)]})
        ours = dry._connection().execute('DESCRIBE "t"').fetchall()
    finally:
        dry.close()
    theirs = engine.backend.connection.execute(f'DESCRIBE "{stand_in}"').fetchall()
    assert [(r[0], r[1]) for r in ours] == [(r[0], r[1]) for r in theirs]
    # Every policy type: the typed NULL and TRY_CAST give one engine type (TYPE_NAMES).
    probe = engine.backend.connection
    for kind in COLUMN_TYPES:
        cast = probe.execute(f"SELECT typeof(CAST(NULL AS {TYPE_NAMES[kind]})), typeof(TRY_CAST('1' AS {TYPE_NAMES[kind]}))").fetchone()
        assert cast[0] == cast[1]


def test_a_query_only_error_is_still_refused_before_the_charge(connect: Callable[..., dpsql.Connection]) -> None:
    con = connect()
    with pytest.raises(UnsupportedQueryError) as refused:
        con.execute("SELECT COUNT(*) FROM people WHERE regexp_matches(dept, '(')")
    assert refused.value.code == "DP123"
    assert con.session.ledger_entries() == []


def test_every_robust_statement_is_dry_run_over_the_stand_in(connect: Callable[..., dpsql.Connection],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    con = connect()
    engine = con.session.engine
    ran: list[str] = []
    check = engine._dry.check
    monkeypatch.setattr(engine._dry, "check", lambda sql, params=None: ran.append(sql) or check(sql, params))
    con.execute(ROBUST).fetchall()
    table = con.session.policy.table("people")
    compiled = compiled_of(con, ROBUST)
    statements = [s for q in compiled.robust_queries for s, _ in q.statements()]
    # The engine statement and every statement a robust read may need, each as its own text, in
    # the dry-run database (whose stand-ins carry the session relations' names).
    assert sorted(ran) == sorted(render(s, "duckdb") for s in [compiled.engine, *statements])
    assert all(f'"{bounded_name(table)}"' in sql for sql in ran)


def test_a_text_that_passed_is_not_run_again(connect: Callable[..., dpsql.Connection], monkeypatch: pytest.MonkeyPatch) -> None:
    con = connect()
    engine = con.session.engine
    ran: list[Any] = []
    check = engine._dry.check
    monkeypatch.setattr(engine._dry, "check", lambda sql, params=None: ran.append(sql) or check(sql, params))
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM people WHERE age > 30").fetchall()
    first = len(ran)
    # Another plan (another epsilon) whose engine statement is the same text: its dry run passed already.
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM people WHERE age > 30").fetchall()
    assert first >= 1 and len(ran) == first
    # A different text runs (negative control).
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM people WHERE age > 31").fetchall()
    assert len(ran) > first
