"""GROUP BY expressions with derived public domains: the released key set is data-free.

Databases: D' = generate_people(3000) without anyone aged 90 or more, and D = D' plus one person
(3 rows, aged 93, dept 'security'). D and D' are neighbours (one person). For a key derived from
the policy (analysis/group_domains.py), dpsql releases every key of the domain, empty ones too,
so the key column of the answer must be identical on D and D', for every seed: the set of keys
carries no information about the person. This runs through the real SQL path (dpsql.connect
with the tables as DataFrames).

Negative control: a domain read from the data (the distinct keys present, what SELECT DISTINCT
or a GROUP BY without a domain and without partition selection would release) differs between
D and D' (key 90 exists only in D), and `same_keys` reports it: the comparison used by the main
test detects a data-dependent key set.
"""

from __future__ import annotations

import tomllib

import pandas as pd
import pytest

import dpsql
from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import generate_people, policy_text
from dpsql.execution.compiled import compile_statement

pytestmark = pytest.mark.statistical

QUERIES = {  # SQL -> how many leading output columns are keys
    "SELECT age // 10 * 10 AS decade, COUNT(*) FROM people GROUP BY decade": 1,
    "SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 90 THEN 'adult' END AS band, SUM(income) FROM people GROUP BY 1": 1,
    "SELECT upper(dept) AS d, AVG(age) FROM people GROUP BY upper(dept)": 1,
    "SELECT FLOOR(age / 7) AS w, dept, STDDEV(income) FROM people GROUP BY 1, 2": 2,
}
SEEDS = range(5)


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    base = generate_people(3000)
    without = base[base.age < 90].reset_index(drop=True)
    person = pd.DataFrame({"person_id": [10**7] * 3, "age": [93] * 3, "income": [50_000.0] * 3,
                           "dept": ["security"] * 3, "region": ["north"] * 3})
    return pd.concat([without, person], ignore_index=True), without


def released_keys(frame: pd.DataFrame, sql: str, seed: int, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[object, ...]]:
    folder = tmp_path_factory.mktemp("policy")
    policy = folder / "policy.toml"
    policy.write_text(policy_text(None), encoding="utf-8")
    with dpsql.connect(policy=str(policy), tables={"people": frame}, random_seed=seed, ledger=":memory:") as con:
        return [tuple(row[:QUERIES[sql]]) for row in con.execute(sql).fetchall()]


def same_keys(first: list[tuple[object, ...]], second: list[tuple[object, ...]]) -> bool:
    """The comparison of the test: the same keys, in the same order."""
    return first == second


@pytest.mark.parametrize("sql", list(QUERIES))
def test_released_keys_are_identical_on_neighbours(sql: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    with_person, without = neighbours()
    for seed in SEEDS:
        keys_d = released_keys(with_person, sql, seed, tmp_path_factory)
        keys_d2 = released_keys(without, sql, seed + 100, tmp_path_factory)
        assert same_keys(keys_d, keys_d2), (sql, seed)
        assert keys_d  # every key of the domain, even the empty ones


def test_the_decade_domain_holds_the_empty_key_in_both(tmp_path_factory: pytest.TempPathFactory) -> None:
    with_person, without = neighbours()
    sql = next(iter(QUERIES))
    assert (90,) in released_keys(without, sql, 1, tmp_path_factory)  # nobody aged 90+ in D': released anyway
    assert (90,) in released_keys(with_person, sql, 1, tmp_path_factory)


def test_negative_control_a_data_derived_key_set_is_detected() -> None:
    with_person, without = neighbours()
    from_data_d = sorted({(int(a) // 10 * 10,) for a in with_person.age})
    from_data_d2 = sorted({(int(a) // 10 * 10,) for a in without.age})
    assert not same_keys(from_data_d, from_data_d2)


def test_the_domain_is_derived_from_the_policy_alone() -> None:
    # The bound query's key domain is computed before any data exists (no source in this policy).
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    _, compiled = compile_statement(next(iter(QUERIES)), None, AnalysisContext(policy, policy.budget.default_query))
    assert compiled.plan.query.keys[0].column.values == (10, 20, 30, 40, 50, 60, 70, 80, 90)  # type: ignore[union-attr]
