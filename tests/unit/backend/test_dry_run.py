"""Dry runs check the statement that will run after the charge, over empty stand-ins of the
session relations (backend/engines/engine.py Engine.dry_run, backend/sql/engine_dialects.py render(relations=...)):
the text differs from the real one only in the relations it reads; a statement that reads any
other session relation is refused before anything runs (fail closed); a query-only error is
still refused (DP123) before the charge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlglot import exp

import dpsql
from dpsql.backend.engines.engine import bounded_name, empty_keyed_name, empty_name, keyed_name, source_name
from dpsql.backend.sql.engine_dialects import UnknownRelation, render
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
    check = engine.backend.check
    monkeypatch.setattr(engine.backend, "check", lambda sql, params=None: ran.append(sql) or check(sql, params))
    engine.dry_run(table, compiled.engine)  # the bounded relation: its stand-in
    assert ran and empty_name(table) in ran[-1] and bounded_name(table) not in ran[-1]
    ran.clear()
    sources = exp.select(exp.Count(this=exp.Star())).from_(exp.to_identifier(source_name(table), quoted=True))
    keyed = exp.select(exp.Count(this=exp.Star())).from_(exp.to_identifier(keyed_name(table, ("dept",)), quoted=True))
    qualified = exp.select(exp.Count(this=exp.Star())).from_(exp.table_("people", db="main"))
    for select in (sources, keyed, qualified):  # the keyed relation of keys the dry run was not told about, too
        with pytest.raises(EngineError, match="no empty stand-in"):
            engine.dry_run(table, select)
    assert ran == []  # nothing reached the engine
    with pytest.raises(UnknownRelation):
        render(sources, "duckdb", {bounded_name(table): empty_name(table)})


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
    check = engine.backend.check
    monkeypatch.setattr(engine.backend, "check", lambda sql, params=None: ran.append(sql) or check(sql, params))
    con.execute(ROBUST).fetchall()
    table = con.session.policy.table("people")
    compiled = compiled_of(con, ROBUST)
    statements = [s for q in compiled.robust_queries for s, _ in q.statements()]
    dry = [sql for sql in ran if empty_name(table) in sql]
    assert len(dry) == 1 + len(statements) and not any(f'"{bounded_name(table)}"' in sql for sql in dry)


def test_a_text_that_passed_is_not_run_again(connect: Callable[..., dpsql.Connection], monkeypatch: pytest.MonkeyPatch) -> None:
    con = connect()
    engine = con.session.engine
    ran: list[Any] = []
    check = engine.backend.check
    monkeypatch.setattr(engine.backend, "check", lambda sql, params=None: ran.append(sql) or check(sql, params))
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM people WHERE age > 30").fetchall()
    first = len(ran)
    # Another plan (another epsilon) whose engine statement is the same text: its dry run passed already.
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM people WHERE age > 30").fetchall()
    assert first >= 1 and len(ran) == first
    # A different text runs (negative control).
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM people WHERE age > 31").fetchall()
    assert len(ran) > first
