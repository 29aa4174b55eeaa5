"""The Spark suite: one SparkSession (local[2], TEST_CONF) for the whole run, a small generated
table written once to Parquet with its policy, and a DuckDB and a Spark engine over it.

Skipped cleanly when pyspark or Java is missing on a developer box; with CI=true the same
absence FAILS (so CI can never pass by silently skipping the Spark suite). Every test in this
directory is marked `spark` (select or deselect with `-m spark` / `-m "not spark"`).

The data (`make_people`, about 6,400 rows) is built to exercise what parity depends on: a few
persons with hundreds of rows (max_rows = 3 drops most of them, so contribution bounding really
chooses rows), rows without a person, NULLs in every column, NaN and +-inf and out-of-bounds
values in the float column, dates inside and far outside the bounds, a text column with a public
domain (and values outside it) and a private one (skewed, mixed case, rare keys, NULL), a bool,
an int with a public domain.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import Policy

SPARK_DIR = Path(__file__).resolve().parent
DATA_SEED = 20261122
BOUND_SEED = 4_611_686_018_427_387_000  # the bounded relations' seed on both engines (< 2^62, like a session's)

DEPTS = ("engineering", "sales", "support", "operations", "marketing", "finance", "hr", "legal")
REGIONS = ("north", "South", "EAST", "west", "central", "north-east", "islands")

POLICY_TEMPLATE = """
[budget]
epsilon = 1000.0
delta = 0.5
default_query_epsilon = 1.0
default_query_delta = 1e-6

[tables.people]
privacy_unit = "pid"
max_rows = 3
max_groups = 2                    # < max_rows: partition selection bounds keys with a seeded window
source = "people.parquet"

[tables.people.columns]
pid    = { type = "int" }
age    = { type = "int", lower = 18, upper = 90 }                       # 73 values: histogram path
score  = { type = "int", lower = 0, upper = 1000000 }                   # 10^6 values: window path
income = { type = "float", lower = 0, upper = 500000 }
day    = { type = "date", lower = 2000-01-01, upper = 2030-12-31 }     # 11,323 days: histogram path
born   = { type = "date", lower = 1800-01-01, upper = 2100-12-31 }     # 109,938 days: window path
dept   = { type = "text", values = [@DEPTS@] }
region = { type = "text" }
active = { type = "bool" }
tier   = { type = "int", values = [1, 2, 3] }                           # an int key with a public domain

[tables.people.median_mechanism]
columns = ["dept", "age", "active"]
bins = { age = [18, 30, 40, 50, 60, 70, 91] }
epsilon = 2.0
accuracy = 3000
mode = "pure"
min_hard_slots = 5

[tables.visits]                   # the same file, with max_groups >= max_rows (no key-bounding window)
privacy_unit = "pid"
max_rows = 2
max_groups = 3
source = "people.parquet"

[tables.visits.columns]
pid    = { type = "int" }
age    = { type = "int", lower = 18, upper = 90 }
income = { type = "float", lower = 0, upper = 500000, precision = 0.5 }
day    = { type = "date" }
region = { type = "text" }

[tables.depts]
public = true
source = "depts.parquet"

[tables.depts.columns]
dept  = { type = "text" }
floor = { type = "int" }
"""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.spark)


def spark_unavailable() -> str | None:
    """Why the Spark suite cannot run here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'dpsql[spark]')"
    from dpsql.backend.engines.spark_engine import java_command

    if java_command() is None:
        return "no Java found (set JAVA_HOME or put java on PATH)"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one SparkSession of the run (local[2], the tuned TEST_CONF, logs off)."""
    reason = spark_unavailable()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the Spark suite must run in CI, but {reason}", pytrace=False)
        pytest.skip(reason)
    from dpsql.backend.engines.spark_engine import TEST_CONF, start_spark

    session = start_spark("local[2]", conf=TEST_CONF)
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


# --- the data ------------------------------------------------------------------------------------------


def make_people(seed: int = DATA_SEED, persons: int = 2500, heavy: int = 6) -> pa.Table:
    """About 6,400 rows; the same table for the same seed."""
    rng = np.random.default_rng(seed)
    per = np.concatenate([rng.choice([1, 2, 3, 4], p=[0.45, 0.3, 0.15, 0.1], size=persons),
                          rng.integers(150, 400, size=heavy)])  # a few persons with hundreds of rows
    n = int(per.sum())

    def nulls(p: float) -> np.ndarray:
        return rng.random(n) < p

    pid = np.repeat(np.arange(1, len(per) + 1), per)
    age = np.repeat(rng.integers(10, 96, size=len(per)), per)  # some outside [18, 90]
    score = rng.integers(-1000, 1_100_000, size=n)
    income = np.round(np.exp(rng.normal(10.3, 0.9, size=n)), 2)
    income[rng.random(n) < 0.01] = -5.5
    income[rng.random(n) < 0.01] = 750_000.0
    special = rng.choice(n, size=45, replace=False)
    income[special] = np.array([np.nan, np.inf, -np.inf] * 15)
    day = rng.integers(0, 365 * 40, size=n) + dt.date(1995, 1, 1).toordinal()
    born = rng.integers(dt.date(1780, 1, 1).toordinal(), dt.date(2110, 1, 1).toordinal(), size=n)
    dept_p = np.r_[np.full(len(DEPTS), 0.97 / len(DEPTS)), 0.03]
    dept = np.array([*DEPTS, "unknown"])[rng.choice(len(DEPTS) + 1, size=n, p=dept_p)]
    region = np.array(REGIONS)[np.minimum(rng.zipf(1.6, size=n) - 1, len(REGIONS) - 1)]
    region = np.where(rng.random(n) < 0.03, np.char.add("r", rng.integers(0, 60, size=n).astype(str)), region)
    active = rng.random(n) < 0.6
    tier = rng.integers(0, 5, size=n)  # 0 and 4 are outside the public domain [1, 2, 3]
    income_null = nulls(0.02)
    income_null[special] = False  # NaN and +-inf stay values, not NULLs
    return pa.table({
        "pid": pa.array(pid, mask=nulls(0.003), type=pa.int64()),  # rows without a person are dropped
        "age": pa.array(age, mask=nulls(0.02), type=pa.int64()),
        "score": pa.array(score, mask=nulls(0.02), type=pa.int64()),
        "income": pa.array(income, mask=income_null, type=pa.float64()),
        "day": pa.array([dt.date.fromordinal(int(d)) for d in day], mask=nulls(0.02), type=pa.date32()),
        "born": pa.array([dt.date.fromordinal(int(d)) for d in born], mask=nulls(0.02), type=pa.date32()),
        "dept": pa.array(dept.tolist(), mask=nulls(0.02), type=pa.string()),
        "region": pa.array(region.tolist(), mask=nulls(0.03), type=pa.string()),
        "active": pa.array(active, mask=nulls(0.05), type=pa.bool_()),
        "tier": pa.array(tier, mask=nulls(0.02), type=pa.int64()),
    })


def policy_text() -> str:
    return POLICY_TEMPLATE.replace("@DEPTS@", ", ".join(json.dumps(d) for d in DEPTS))


@dataclass(frozen=True)
class SparkData:
    """The suite's data: Parquet files and the policy next to them."""

    directory: Path
    policy_path: Path
    policy: Policy
    people: pa.Table

    def frame(self) -> pd.DataFrame:
        """The people table as a pandas DataFrame (a fresh copy)."""
        return self.people.to_pandas()


@pytest.fixture(scope="session")
def spark_data(tmp_path_factory: pytest.TempPathFactory) -> SparkData:
    directory = tmp_path_factory.mktemp("spark-data")
    people = make_people()
    pq.write_table(people, directory / "people.parquet")
    pq.write_table(pa.table({"dept": list(DEPTS), "floor": list(range(1, len(DEPTS) + 1))}), directory / "depts.parquet")
    path = directory / "policy.toml"
    path.write_text(policy_text(), encoding="utf-8")
    return SparkData(directory, path, load_policy(path), people)


@dataclass(frozen=True)
class EnginePair:
    """A DuckDB and a Spark engine over the same data, bounded relations built with BOUND_SEED."""

    duckdb: Any
    spark: Any

    def __iter__(self) -> Iterator[Any]:
        return iter((self.duckdb, self.spark))


@pytest.fixture(scope="session")
def engines(spark: Any, spark_data: SparkData) -> Iterator[EnginePair]:
    """Both engines over the same Parquet file (the policy's source=)."""
    from dpsql.backend.engines.duckdb_engine import DuckDBEngine
    from dpsql.backend.engines.spark_engine import SparkEngine

    pair = EnginePair(DuckDBEngine(spark_data.policy), SparkEngine(spark_data.policy, spark))
    for engine in pair:
        for name in ("people", "visits"):
            engine.ensure_bounded(spark_data.policy.table(name), BOUND_SEED)
    yield pair
    for engine in pair:
        engine.close()
