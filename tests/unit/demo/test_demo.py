"""The bundled demo: the synthetic people generator, the demo policy and the demo cache."""

from __future__ import annotations

import tomllib
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.catalog.loader import load_policy
from dpsql.demo import people
from dpsql.demo.people import DEMO_POLICY, DEPTS, REGIONS, ensure_demo, generate_people, policy_text, user_cache_dir

N = 20_000


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate_people(N, seed=7)


def test_shape_and_types(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == ["person_id", "age", "income", "dept", "region"]
    assert len(frame) == N
    assert frame["person_id"].dtype == np.int64
    assert frame["age"].dtype == np.int64
    assert frame["income"].dtype == np.float64
    assert pd.api.types.is_string_dtype(frame["dept"]) and pd.api.types.is_string_dtype(frame["region"])
    assert not frame.isna().any().any()


@pytest.mark.parametrize("n_rows", [0, 1, 2, 3, 10, 999])
def test_exact_row_count(n_rows: int) -> None:
    assert len(generate_people(n_rows, seed=1)) == n_rows


def test_ranges(frame: pd.DataFrame) -> None:
    assert frame["age"].between(18, 90).all()
    assert frame["income"].between(0, 500_000).all()
    assert 30 < frame["age"].mean() < 60
    assert 9.5 < np.log(frame["income"]).mean() < 11.5


def test_one_to_three_rows_per_person(frame: pd.DataFrame) -> None:
    ids = frame["person_id"]
    assert ids.min() == 1 and ids.is_monotonic_increasing
    assert (np.diff(ids.unique()) == 1).all()  # persons numbered 1, 2, 3, ... without gaps
    sizes = ids.value_counts()
    assert set(sizes.unique()) == {1, 2, 3}
    shares = sizes.value_counts(normalize=True)
    assert abs(shares[1] - 0.5) < 0.03 and abs(shares[2] - 0.3) < 0.03 and abs(shares[3] - 0.2) < 0.03


def test_age_and_region_constant_per_person(frame: pd.DataFrame) -> None:
    per_person = frame.groupby("person_id")[["age", "region"]].nunique()
    assert (per_person == 1).all().all()


def test_domains_and_skew(frame: pd.DataFrame) -> None:
    assert set(frame["dept"]) == set(DEPTS) and len(DEPTS) == 12
    assert set(frame["region"]) == set(REGIONS) and len(REGIONS) == 5
    depts = frame["dept"].value_counts(normalize=True)
    assert depts.index[0] == "engineering" and depts.iloc[0] > 5 * depts.iloc[-1]  # Zipf-like
    regions = frame["region"].value_counts(normalize=True)
    assert regions.max() < 2.5 * regions.min()  # only mildly skewed


def test_deterministic_by_seed(frame: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(generate_people(N, seed=7), frame)
    other = generate_people(N, seed=8)
    assert not other["income"].equals(frame["income"])


def test_demo_policy_text_is_valid_toml_with_the_declared_columns() -> None:
    raw = tomllib.loads(DEMO_POLICY)
    assert raw["budget"] == {
        "epsilon": 10.0,
        "delta": 1e-5,
        "default_query_epsilon": 0.1,
        "default_query_delta": 1e-8,
    }
    table = raw["tables"]["people"]
    assert table["source"] == "people.parquet"
    assert "source" not in tomllib.loads(policy_text(None))["tables"]["people"]
    assert table["columns"]["dept"]["values"] == list(DEPTS)
    assert "values" not in table["columns"]["region"]


def test_ensure_demo_writes_under_cache_dir_and_loads(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = ensure_demo(cache)
    assert path == (cache / "demo-v1" / "policy.toml").resolve()
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")}
    assert written == {Path("cache"), Path("cache/demo-v1"), Path("cache/demo-v1/policy.toml"), Path("cache/demo-v1/people.parquet")}

    policy = load_policy(path)
    assert policy.budget.total.epsilon == Fraction(10)
    table = policy.table("people")
    assert table is not None
    assert table.source == (cache / "demo-v1" / "people.parquet").resolve()
    assert table.privacy_unit == "person_id" and table.max_rows == 3 and table.max_groups == 2
    age, income, dept, region = (table.column(c) for c in ("age", "income", "dept", "region"))
    assert age.bounded and (age.lower, age.upper) == (18, 90)
    assert income.bounded and (income.lower, income.upper) == (0, 500_000)
    assert dept.public_domain and dept.values == DEPTS
    assert not region.public_domain and not region.bounded
    assert not table.column("person_id").bounded

    data = pd.read_parquet(table.source)
    assert len(data) == people.DEFAULT_ROWS
    assert list(data.columns) == ["person_id", "age", "income", "dept", "region"]
    pd.testing.assert_series_equal(data["income"], generate_people()["income"])


def test_ensure_demo_second_call_does_not_rewrite(tmp_path: Path) -> None:
    path = ensure_demo(tmp_path)
    data = path.with_name("people.parquet")
    before = (path.stat().st_mtime_ns, data.stat().st_mtime_ns)
    assert ensure_demo(tmp_path) == path
    assert (path.stat().st_mtime_ns, data.stat().st_mtime_ns) == before
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_ensure_demo_rewrites_a_missing_file(tmp_path: Path) -> None:
    path = ensure_demo(tmp_path)
    path.with_name("people.parquet").unlink()
    assert ensure_demo(tmp_path) == path
    assert path.with_name("people.parquet").is_file()


def test_ensure_demo_concurrent_first_uses(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        paths = list(pool.map(lambda _: ensure_demo(tmp_path), range(4)))
    assert len(set(paths)) == 1
    assert load_policy(paths[0]).table("people") is not None
    assert len(pd.read_parquet(paths[0].with_name("people.parquet"))) == people.DEFAULT_ROWS
    assert sorted(p.name for p in paths[0].parent.iterdir()) == ["people.parquet", "policy.toml"]


def test_ensure_demo_uses_env_and_never_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd, cache = tmp_path / "cwd", tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("DPSQL_CACHE_DIR", str(cache))
    path = ensure_demo()
    assert path == cache.resolve() / "demo-v1" / "policy.toml"
    assert path.is_file()
    assert list(cwd.iterdir()) == []


def test_default_cache_dir_follows_xdg_then_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPSQL_CACHE_DIR", raising=False)
    monkeypatch.setattr(people.sys, "platform", "linux")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "dpsql"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the XDG spec says
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "dpsql"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "dpsql"
    monkeypatch.setattr(people.sys, "platform", "darwin")
    assert user_cache_dir() == tmp_path / "home" / "Library" / "Caches" / "dpsql"


def test_write_parquet_takes_any_path(tmp_path: Path) -> None:
    target = tmp_path / "it's a \"name\"; DROP TABLE x.parquet"
    frame = generate_people(50, seed=3)
    write_parquet(frame, target)
    back = pd.read_parquet(target)
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert back["person_id"].dtype == np.int64 and back["income"].dtype == np.float64
