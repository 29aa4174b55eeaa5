"""The policy's [server] table: defaults, values, and errors that name the key and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import ServerSettings
from dpsql.errors import CatalogError
from tests.conftest import make_policy_text


def _policy(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(source="people.parquet", extra="[server]\n" + server), encoding="utf-8")
    return path


def test_defaults_without_a_server_table(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(source="people.parquet"), encoding="utf-8")
    settings = load_policy(path).server
    assert settings == ServerSettings()
    assert (settings.max_connections, settings.authentication_timeout, settings.statement_timeout) == (100, 60.0, 300.0)


def test_values_are_read(tmp_path: Path) -> None:
    text = ("max_connections = 7\nauthentication_timeout = 2.5\nstatement_timeout = 30\nmax_message_bytes = 20000\n"
            "catalog_timeout = 1\ncatalog_memory_mb = 64\ncatalog_max_rows = 500\n")  # fmt: skip
    assert load_policy(_policy(tmp_path, text)).server == ServerSettings(7, 2.5, 30.0, 20000, 1.0, 64, 500)


@pytest.mark.parametrize(
    "line, key",
    [
        ("max_conections = 5", "server.max_conections"),  # unknown key
        ("max_connections = 0", "server.max_connections"),
        ("max_connections = 2.5", "server.max_connections"),
        ("max_connections = true", "server.max_connections"),
        ("statement_timeout = 0", "server.statement_timeout"),
        ("statement_timeout = -1", "server.statement_timeout"),
        ("statement_timeout = 'long'", "server.statement_timeout"),
        ("authentication_timeout = 1e9", "server.authentication_timeout"),
        ("max_message_bytes = 100", "server.max_message_bytes"),
        ("catalog_memory_mb = 1", "server.catalog_memory_mb"),
    ],
)
def test_errors_name_the_key_and_the_file(tmp_path: Path, line: str, key: str) -> None:
    with pytest.raises(CatalogError) as info:
        load_policy(_policy(tmp_path, line + "\n"))
    assert f"key '{key}'" in str(info.value) and str(tmp_path / "policy.toml") in str(info.value)
    assert info.value.code == "DP001"


def test_server_must_be_a_table(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("server = 3\n" + make_policy_text(source="people.parquet"), encoding="utf-8")
    with pytest.raises(CatalogError, match="key 'server'"):
        load_policy(path)


def test_presentation_defaults_are_booleans(tmp_path: Path) -> None:
    assert (ServerSettings().ci_columns, ServerSettings().round) == (False, True)
    settings = load_policy(_policy(tmp_path, "ci_columns = true\nround = false\n")).server
    assert (settings.ci_columns, settings.round) == (True, False)
    for line in ("ci_columns = 1", "round = 'off'"):
        with pytest.raises(CatalogError, match=f"key 'server.{line.split(' ')[0]}'"):
            load_policy(_policy(tmp_path, line + "\n"))


def test_replay_seconds_is_read_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(source="people.parquet", replay_seconds=90), encoding="utf-8")
    assert load_policy(path).budget.replay_seconds == 90.0
    for bad in (-1, 10**9):
        path.write_text(make_policy_text(source="people.parquet", replay_seconds=bad), encoding="utf-8")
        with pytest.raises(CatalogError, match="key 'budget.replay_seconds'"):
            load_policy(path)
