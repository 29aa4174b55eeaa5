"""[engine] limits: validated by the loader, applied to every session's DuckDB."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.catalog.loader import policy_from_dict
from dpsql.errors import CatalogError

BASE = {
    "budget": {"epsilon": 1, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 0},
    "tables": {"t": {"privacy_unit": "pid", "max_rows": 1, "columns": {"pid": {"type": "int"}}}},
}


@pytest.mark.parametrize("engine", [
    {"memory_limit": 4}, {"memory_limit": "lots"}, {"threads": 0}, {"threads": True}, {"threads": "2"}, {"cores": 2},
    {"temp_directory": 3}, {"temp_directory": " "},
])
def test_invalid_engine_limits_name_the_key(engine: dict[str, object]) -> None:
    with pytest.raises(CatalogError) as info:
        policy_from_dict({**BASE, "engine": engine})
    assert info.value.code == "DP001" and "engine." in str(info.value)


def test_engine_limits_reach_the_session_engine(tmp_path: Path) -> None:
    policy = policy_from_dict({**BASE, "engine": {"memory_limit": "512MiB", "threads": 1}})
    with dpsql.connect(policy=policy, tables={"t": pd.DataFrame({"pid": [1, 2]})}) as con:
        connection = con.session.engine.backend.connection
        threads = connection.execute("SELECT current_setting('threads')").fetchone()[0]
        memory = connection.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert int(threads) == 1 and memory.replace(" ", "") in ("512.0MiB", "536.8MB", "512MiB")


def test_without_engine_limits_duckdb_keeps_its_defaults() -> None:
    policy = policy_from_dict(BASE)
    assert policy.engine.memory_limit is None and policy.engine.threads is None and policy.engine.temp_directory is None


def test_temp_directory_is_relative_to_the_policy_and_reaches_duckdb(tmp_path: Path) -> None:
    # Spilling: what exceeds memory_limit goes to this directory (a 100M-row table under 4GB).
    policy = policy_from_dict({**BASE, "engine": {"memory_limit": "256MiB", "temp_directory": "spill"}}, tmp_path / "policy.toml")
    assert policy.engine.temp_directory == str((tmp_path / "spill").resolve())
    with dpsql.connect(policy=policy, tables={"t": pd.DataFrame({"pid": [1, 2]})}) as con:
        connection = con.session.engine.backend.connection
        spill = connection.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    assert spill == str((tmp_path / "spill").resolve())


@pytest.mark.parametrize("analyst", [{"epsilon": -1}, {"delta": 1}, {"epsilon": 1, "delta": -0.1}])
def test_analyst_budgets_out_of_range_are_policy_errors(analyst: dict[str, object]) -> None:
    with pytest.raises(CatalogError) as info:
        policy_from_dict({**BASE, "analysts": {"bob": analyst}})
    assert info.value.code == "DP001" and "analysts.bob." in str(info.value)
