"""DuckDB builds the session's relations with faster settings (duckdb_engine._MATERIALIZE_SETTINGS)
and restores the connection's own afterwards: warm queries and post-processing (which share the
connection) keep insertion order and the default perfect hash threshold."""

from __future__ import annotations

from sqlglot import exp

from dpsql.backend.engines.duckdb_engine import DuckDBBackend
from dpsql.catalog.loader import policy_from_dict


def policy(engine: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    return policy_from_dict({
        "budget": {"epsilon": 1, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 0},
        "tables": {"t": {"privacy_unit": "pid", "max_rows": 3, "columns": {"pid": {"type": "int"}}}},
        **({"engine": engine} if engine else {}),
    })


def settings() -> exp.Select:
    return exp.select(exp.alias_(exp.func("current_setting", exp.Literal.string("preserve_insertion_order")), "order"),
                      exp.alias_(exp.func("current_setting", exp.Literal.string("perfect_ht_threshold")), "pht"))


def test_relations_are_built_with_the_settings_and_the_connection_keeps_its_own() -> None:
    backend = DuckDBBackend(policy())
    try:
        before = backend.execute("SELECT current_setting('preserve_insertion_order'), current_setting('perfect_ht_threshold')").to_pylist()
        backend.materialize("built", settings())
        assert backend.execute('SELECT "order", pht FROM built').to_pylist() == [{"order": False, "pht": 24}]
        after = backend.execute("SELECT current_setting('preserve_insertion_order'), current_setting('perfect_ht_threshold')").to_pylist()
        assert after == before and list(before[0].values()) == [True, 12]
        backend.materialize("viewed", settings(), view=True)  # a view runs later, with the connection's settings
        assert backend.execute('SELECT "order", pht FROM viewed').to_pylist() == [{"order": True, "pht": 12}]
    finally:
        backend.close()


def test_a_memory_limit_keeps_the_perfect_hash_threshold() -> None:
    backend = DuckDBBackend(policy({"memory_limit": "1GB"}))
    try:
        backend.materialize("built", settings())
        assert backend.execute('SELECT "order", pht FROM built').to_pylist() == [{"order": False, "pht": 12}]
    finally:
        backend.close()
