"""`[tables.<t>.median_mechanism]`: parsed into the domain X and the layer's budget; every error
names the key and the file."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpsql.catalog.loader import load_policy
from dpsql.errors import CatalogError
from tests.unit.mechanisms.median_mechanism.support import mm_policy_text


def load(tmp_path: Path, **kwargs: object):
    path = tmp_path / "policy.toml"
    path.write_text(mm_policy_text(**kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return load_policy(path), path


def test_the_issue_example_parses(tmp_path: Path) -> None:
    policy, _ = load(tmp_path, bins={"age": [18, 30, 40, 50, 60, 70, 91]}, epsilon=0.3, accuracy=2000,
                     mode="zcdp", delta=1e-6)
    config = policy.table("people").median_mechanism
    assert config is not None
    assert config.columns == ("dept", "region", "age")
    dept, region, age = config.domains
    assert (dept.kind, dept.size) == ("values", 13)  # 12 declared values + the NULL cell
    assert (region.kind, region.size) == ("values", 6)
    assert age.kind == "bins" and age.edges[0] == 18 and age.edges[-1] == 91 and age.size == 7
    assert config.domain_size == 13 * 6 * 7
    assert (config.epsilon, config.accuracy, config.mode, config.delta) == (Fraction(3, 10), 2000, "zcdp", Fraction(1, 10**6))
    assert (config.candidates, config.min_hard_slots, config.after_halt, config.beta) == (9, None, "laplace", Fraction(1, 20))
    # Still kept verbatim for anything that reads the raw section.
    assert policy.extra["tables.people.median_mechanism"]["accuracy"] == 2000


def test_int_range_and_bool_domains(tmp_path: Path) -> None:
    policy, _ = load(tmp_path, columns=["age"])
    (age,) = policy.table("people").median_mechanism.domains
    assert age.kind == "range" and age.values[0] == 18 and age.values[-1] == 90 and age.size == 74


@pytest.mark.parametrize(
    ("kwargs", "key", "words"),
    [
        ({"colour": 1}, "median_mechanism.colour", "unknown key"),
        ({"epsilon": None}, "median_mechanism.epsilon", "> 0"),
        ({"epsilon": -1}, "median_mechanism.epsilon", "> 0"),
        ({"accuracy": None}, "median_mechanism.accuracy", ">= 2"),
        ({"mode": "renyi"}, "median_mechanism.mode", "pure"),
        ({"mode": "zcdp"}, "median_mechanism.delta", "missing"),
        ({"mode": "zcdp", "delta": 1.5}, "median_mechanism.delta", "(0, 1)"),
        ({"delta": 1e-6}, "median_mechanism.delta", "zcdp"),
        ({"columns": []}, "median_mechanism.columns", "non-empty"),
        ({"columns": ["dept", "dept"]}, "median_mechanism.columns", "twice"),
        ({"columns": ["shoe_size"]}, "median_mechanism.columns", "not a declared column"),
        ({"columns": ["person_id"]}, "median_mechanism.columns", "privacy unit"),
        ({"columns": ["income"]}, "median_mechanism.columns", "no finite domain"),
        ({"bins": {"dept": [1, 2]}}, "median_mechanism.bins.dept", "int and float"),
        ({"bins": {"age": [30, 20]}}, "median_mechanism.bins.age", "increasing"),
        ({"bins": {"age": [30]}}, "median_mechanism.bins.age", "at least two"),
        ({"bins": {"age": [18, 30.5]}}, "median_mechanism.bins.age", "integers"),
        ({"bins": {"income": [0, 1]}}, "median_mechanism.bins.income", "not in columns"),
        ({"candidates": 0}, "median_mechanism.candidates", ">= 1"),
        ({"candidates": 65}, "median_mechanism.candidates", "at most 64"),
        ({"beta": 0.7}, "median_mechanism.beta", "(0, 0.5)"),
        ({"after_halt": "panic"}, "median_mechanism.after_halt", "laplace"),
        ({"min_hard_slots": True}, "median_mechanism.min_hard_slots", "integer"),
        ({"columns": ["dept", "region", "age", "income"], "bins": {"income": list(range(0, 500001, 100))},
          "candidates": 64}, "median_mechanism.columns", "too many"),
    ],
)
def test_errors_name_the_key_and_the_file(tmp_path: Path, kwargs: dict[str, object], key: str, words: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(mm_policy_text(**kwargs), encoding="utf-8")  # type: ignore[arg-type]
    with pytest.raises(CatalogError) as info:
        load_policy(path)
    message = str(info.value)
    assert str(path) in message
    assert f"tables.people.{key}" in message
    assert words in message


def test_float_bins_and_public_seed(tmp_path: Path) -> None:
    policy, _ = load(tmp_path, columns=["income", "dept"], bins={"income": [0, 1000.5, 50000, 500001]}, public_seed=7,
                     candidates=1, after_halt="refuse", expected_queries=5000, min_hard_slots=10)
    config = policy.table("people").median_mechanism
    income = config.domain("income")
    assert income.kind == "bins" and income.edges[1] == Fraction(2001, 2) and income.size == 4
    assert (config.public_seed, config.candidates, config.after_halt, config.expected_queries) == (7, 1, "refuse", 5000)
