"""Shared fixtures (a demo-like policy file factory, a small people table, a connect helper) and
the test tiers.

Tiers (CONTRIBUTING.md, "The test tiers"): every test is marked with the tier of its directory
under tests/ (unit, golden, grammar, integration, security, statistical, audit, corpus, spark,
slow), and a test that uses the real PostgreSQL server is marked `integration` too. A plain
`pytest` (no path, no -m) runs the fast tiers only: the other directories are not even imported,
and fast-directory tests marked slow, statistical, spark or integration are deselected.
`pytest --all` runs everything (.ci/run); a path or a -m expression selects as pytest always does.

Kept small on purpose; add fixtures here only when several test modules need them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.demo.people import DEMO_VERSION, PARQUET_NAME, POLICY_NAME, ensure_demo, generate_people, policy_text

TESTS = Path(__file__).resolve().parent
FAST_TIERS = ("unit", "golden", "grammar")
OTHER_TIERS = ("integration", "security", "statistical", "audit", "corpus", "spark", "slow")
NOT_FAST = ("slow", "statistical", "spark", "integration")  # markers that keep a test out of a plain `pytest`
FIXTURE_TIERS = {"postgres_server": "integration"}  # a real PostgreSQL server: processes, seconds
# The parameter of a fixture that reaches the server through request.getfixturevalue (pytest cannot
# see that dependency, so FIXTURE_TIERS cannot): `params=["sqlite", POSTGRES]`.
POSTGRES = pytest.param("postgres", marks=pytest.mark.integration, id="postgres")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--all", action="store_true", dest="all_tiers",
                     help="run every test tier (what .ci/run runs); without it, a plain `pytest` runs the fast tiers")


def fast_only(config: pytest.Config) -> bool:
    """A plain `pytest`: no --all, no -m, no path (pytest fell back to testpaths)."""
    return (not config.getoption("all_tiers") and not config.option.markexpr
            and config.args_source == pytest.Config.ArgsSource.TESTPATHS)


def tier_of(path: Path) -> str | None:
    """The tier of a test file: its first directory under tests/."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in FAST_TIERS + OTHER_TIERS else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # The slow tiers' modules are not imported by a plain `pytest`: importing them (servers,
    # clients, pyspark, scipy) was a third of the collection time.
    if fast_only(config) and collection_path.parent == TESTS and collection_path.name in OTHER_TIERS:
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(Path(str(item.path)))
        if tier is not None:
            item.add_marker(tier)
        for fixture, marker in FIXTURE_TIERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
    if fast_only(config):
        kept = [item for item in items if not any(item.get_closest_marker(m) for m in NOT_FAST)]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = kept


PEOPLE_ROWS = 3000
PEOPLE_SEED = 20261122


def _set_budget_line(text: str, key: str, value: float) -> str:
    # Lines such as "epsilon = 10.0   # ..." inside [budget]; `^key = ` does not match the
    # default_query_* lines. Exactly one replacement, so a template change fails loudly.
    new, count = re.subn(rf"(?m)^{key} = \S+", f"{key} = {value!r}", text)
    if count != 1:
        raise AssertionError(f"the demo policy template has {count} '{key} = ' lines, expected 1")
    return new


def make_policy_text(
    *,
    epsilon: float = 10.0,
    delta: float = 1e-5,
    default_epsilon: float | None = None,
    default_delta: float | None = None,
    source: str | None = None,
    max_rows: int | None = None,
    max_groups: int | None = None,
    extra: str = "",
    accountant: str | None = None,
    replay_seconds: float | None = None,
) -> str:
    """The demo policy (`policy_text(source)`) with another budget, limits and extra TOML appended;
    `accountant` adds `[budget] accountant = ...` (without it, the default "adaptive" filter applies);
    `replay_seconds` adds `[budget] replay_seconds = ...` (0: every repeat is charged and noised anew)."""
    text = policy_text(source)
    text = _set_budget_line(text, "epsilon", float(epsilon))
    text = _set_budget_line(text, "delta", float(delta))
    if accountant is not None:
        text, n = re.subn(r"(?m)^(delta = \S+.*)$", lambda m: f"{m.group(1)}\naccountant = {accountant!r}", text)
        assert n == 1
    if replay_seconds is not None:
        text, n = re.subn(r"(?m)^(\[budget\].*)$", lambda m: f"{m.group(1)}\nreplay_seconds = {replay_seconds!r}", text)
        assert n == 1
    if default_epsilon is not None:
        text = _set_budget_line(text, "default_query_epsilon", float(default_epsilon))
    if default_delta is not None:
        text = _set_budget_line(text, "default_query_delta", float(default_delta))
    if max_rows is not None:
        text, n = re.subn(r"(?m)^max_rows = \d+", f"max_rows = {int(max_rows)}", text)
        assert n == 1
    if max_groups is not None:
        text, n = re.subn(r"(?m)^max_groups = \d+", f"max_groups = {int(max_groups)}", text)
        assert n == 1
    return text + ("\n" + extra if extra else "")


PolicyFactory = Callable[..., Path]


@pytest.fixture(scope="session")
def demo_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled demo's policy file, its data written once per test session."""
    return ensure_demo(tmp_path_factory.mktemp("demo-source"))


@pytest.fixture(autouse=True)
def isolated_demo_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, demo_source: Path) -> Path:
    """Each test gets its own user cache directory, so its own persistent demo ledger (the demo's
    budget survives runs), with the session's demo files linked in (written once, not per test)."""
    cache = tmp_path_factory.mktemp("cache")
    (cache / DEMO_VERSION).mkdir()
    for name in (POLICY_NAME, PARQUET_NAME):
        (cache / DEMO_VERSION / name).symlink_to(demo_source.parent / name)
    monkeypatch.setenv("DPSQL_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def policy_file(tmp_path: Path) -> PolicyFactory:
    """`policy_file(epsilon=..., delta=..., source=..., extra=..., name=...)` writes a policy in tmp_path."""

    def make(name: str = "policy.toml", **kwargs: Any) -> Path:
        path = tmp_path / name
        path.write_text(make_policy_text(**kwargs), encoding="utf-8")
        return path

    return make


@pytest.fixture(scope="session")
def people_frame() -> pd.DataFrame:
    """generate_people(3000): 1-3 rows per person, so max_rows = 3 never drops a row. Do not mutate."""
    return generate_people(PEOPLE_ROWS, seed=PEOPLE_SEED)


@pytest.fixture
def people(people_frame: pd.DataFrame) -> pd.DataFrame:
    """A private copy of the small people table, safe to modify in a test."""
    return people_frame.copy()


@pytest.fixture
def connect(policy_file: PolicyFactory, people_frame: pd.DataFrame) -> Iterator[Callable[..., dpsql.Connection]]:
    """`connect(policy=None, tables=None, **kw)`: dpsql.connect on the people table; closed after the test.

    Without `policy`, a fresh demo-like policy (epsilon 10, delta 1e-5) is written; without
    `tables` (and without `database`), the session people table is used.
    """
    opened: list[dpsql.Connection] = []

    def open_(policy: Path | None = None, tables: dict[str, pd.DataFrame] | None = None, **kwargs: Any) -> dpsql.Connection:
        if policy is None:
            policy = policy_file()
        if tables is None and "database" not in kwargs:
            tables = {"people": people_frame}
        con = dpsql.connect(policy=policy, tables=tables, **kwargs)
        opened.append(con)
        return con

    yield open_
    for con in opened:
        con.close()


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A real PostgreSQL server on 127.0.0.1 (tests/postgres_server.py), for the session.

    Skips where the server binaries are missing, but fails under CI=true (.ci/run installs them).
    A plain `pytest` (the fast tiers) must never start it: a test that reaches it there is missing
    its `integration` mark (use POSTGRES as the fixture parameter).
    """
    from tests.postgres_server import PostgresServer, missing_reason

    if fast_only(request.config):
        pytest.fail("a fast-tier test started the PostgreSQL server: mark it integration (tests/conftest.py, POSTGRES)")

    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the PostgreSQL ledger tests: {reason}")
        pytest.skip(reason)
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def postgres_url(postgres_server: Any) -> str:
    """The postgresql:// URL of a fresh, empty database on the test server."""
    return postgres_server.new_database()
