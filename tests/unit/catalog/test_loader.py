"""Policy loading: the fixed keys, exact numbers, and errors naming the key and the file."""

from datetime import datetime
from fractions import Fraction
from pathlib import Path

import pytest

from dpsql.catalog.loader import load_policy
from dpsql.errors import CatalogError

GOOD = """
[budget]
epsilon = 3.0
delta = 1e-6
default_query_epsilon = 0.1
default_query_delta = 1e-8

[tables.people]
privacy_unit = "person_id"
max_rows = 3
max_groups = 2
source = "people.parquet"

[tables.people.columns]
person_id = { type = "int" }
age    = { type = "int",   lower = 18, upper = 90 }
income = { type = "float", lower = 0,  upper = 500000 }
dept   = { type = "text",  values = ["eng", "sales", "ops"] }
region = { type = "text" }
joined = { type = "date", lower = 2000-01-01, upper = 2025-12-31 }

[tables.depts]
public = true
source = "depts.csv"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def test_good_policy_loads_exactly(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, GOOD))
    assert policy.budget.total.epsilon == 3 and policy.budget.default_query.epsilon == Fraction(1, 10)
    assert policy.budget.total.delta == Fraction(1, 10**6)
    people = policy.table("PEOPLE")
    assert people is not None and people.privacy_unit == "person_id" and people.max_rows == 3
    assert people.source == tmp_path / "people.parquet"
    assert people.column("dept").values == ("eng", "sales", "ops")
    assert not people.column("region").public_domain
    assert people.column("income").bounded and not people.column("person_id").bounded
    assert policy.table("depts").public


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("max_groups = 2", "max_groups = 2\nmax_rowz = 1", "tables.people.max_rowz"),
        ("[budget]", "[budget]\nepsilom = 1", "budget.epsilom"),
        ('type = "float"', 'type = "real"', "tables.people.columns.income.type"),
        ("lower = 18, upper = 90", "lower = 18", "tables.people.columns.age"),
        ('privacy_unit = "person_id"', 'privacy_unit = "nobody"', "tables.people.privacy_unit"),
        ("max_rows = 3", "max_rows = 0", "tables.people.max_rows"),
        ("epsilon = 3.0", "epsilon = -1", "budget.epsilon"),
        ('values = ["eng", "sales", "ops"]', 'values = ["eng", "eng"]', "tables.people.columns.dept.values"),
        ("lower = 18, upper = 90", "lower = 90, upper = 18", "tables.people.columns.age"),
    ],
)
def test_errors_name_key_and_file(tmp_path: Path, old: str, new: str, key: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(CatalogError) as info:
        load_policy(path)
    assert key in str(info.value) and str(path) in str(info.value)


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not found"):
        load_policy(tmp_path / "nope.toml")
    with pytest.raises(CatalogError, match="not valid TOML"):
        load_policy(write(tmp_path, "[budget\n"))


def test_float_grid_is_a_power_of_two_with_about_2_30_steps(tmp_path: Path) -> None:
    income = load_policy(write(tmp_path, GOOD)).table("people").column("income")
    grid = income.grid()
    assert grid.numerator == 1 and grid.denominator & (grid.denominator - 1) == 0
    assert 2**29 <= 500000 / grid <= 2**31


def test_timestamp_columns_take_local_date_time_bounds_and_values(tmp_path: Path) -> None:
    joined = 'joined = { type = "date", lower = 2000-01-01, upper = 2025-12-31 }\n'
    text = GOOD.replace(joined, joined + 'seen = { type = "timestamp", lower = 2024-01-01T00:00:00, upper = 2024-01-02 }\n'
                        'shift = { type = "timestamp", values = [2024-01-01T08:00:00, 2024-01-01T16:00:00] }\n')
    people = load_policy(write(tmp_path, text)).table("people")
    assert people is not None
    seen = people.column("seen")
    assert seen.type == "timestamp" and seen.lower == 1_704_067_200 and seen.upper == 1_704_067_200 + 86_400  # seconds since 1970
    assert people.column("shift").values == (datetime(2024, 1, 1, 8), datetime(2024, 1, 1, 16))


@pytest.mark.parametrize("bound", ["2024-01-01T00:00:00+02:00", "1", "\"2024-01-01\""])
def test_timestamp_bounds_must_be_local_date_times(tmp_path: Path, bound: str) -> None:
    joined = 'joined = { type = "date", lower = 2000-01-01, upper = 2025-12-31 }\n'
    text = GOOD.replace(joined, joined + f'seen = {{ type = "timestamp", lower = {bound}, upper = 2024-12-31T00:00:00 }}\n')
    with pytest.raises(CatalogError) as info:
        load_policy(write(tmp_path, text))
    assert "tables.people.columns.seen.lower" in str(info.value)
