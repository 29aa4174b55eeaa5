"""`unit` (the kind of person a private table protects) and column `identifier`s
(docs/policy-reference.md; semantic_rules.md, "Units and identifiers in the policy")."""

from __future__ import annotations

import pytest

from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Policy, Table
from dpsql.errors import CatalogError

BUDGET = {"epsilon": 1.0, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 1e-8}


def load(**tables: dict[str, object]) -> Policy:
    return policy_from_dict({"budget": BUDGET, "tables": tables})


def private(unit_column: str, *, unit: object = None, type_: str = "int", **columns: dict[str, object]) -> dict[str, object]:
    spec: dict[str, object] = {"privacy_unit": unit_column, "columns": {unit_column: {"type": type_}, **columns}}
    if unit is not None:
        spec["unit"] = unit
    return spec


def table(policy: Policy, name: str) -> Table:
    found = policy.table(name)
    assert found is not None
    return found


def test_a_table_without_unit_is_named_after_its_unit_column() -> None:
    # Older policies keep their meaning: units match by column name, as before.
    policy = load(people=private("person_id"), visits=private("person_id"), badges=private("badge_id"))
    assert table(policy, "people").unit_name == "person_id"
    assert table(policy, "people").shares_unit(table(policy, "visits"))
    assert not table(policy, "people").shares_unit(table(policy, "badges"))


def test_a_named_unit_joins_differently_named_columns_and_separates_equal_names() -> None:
    policy = load(customer=private("c_custkey", unit="Customer"), orders=private("o_custkey", unit="customer"),
                  professors=private("id", unit="professor"), students=private("id", unit="student"))
    assert table(policy, "customer").unit_name == "customer"  # lower-cased
    assert table(policy, "customer").shares_unit(table(policy, "orders"))
    assert not table(policy, "professors").shares_unit(table(policy, "students"))


def test_the_same_unit_with_unit_columns_of_different_types_is_not_shared() -> None:
    policy = load(a=private("k", unit="person"), b=private("k", unit="person", type_="text"))
    assert not table(policy, "a").shares_unit(table(policy, "b"))


def test_a_public_table_shares_no_unit() -> None:
    policy = load(a=private("k"), depts={"public": True, "columns": {"k": {"type": "int"}}})
    assert not table(policy, "a").shares_unit(table(policy, "depts"))
    assert table(policy, "depts").unit_name is None


@pytest.mark.parametrize("value", ["", "two words", "a-b", 3, True])
def test_unit_must_be_a_name(value: object) -> None:
    with pytest.raises(CatalogError, match=r"tables\.a\.unit"):
        load(a=private("k", unit=value))


def test_a_public_table_has_no_unit() -> None:
    with pytest.raises(CatalogError, match="unit"):
        load(depts={"public": True, "unit": "person", "columns": {"k": {"type": "int"}}})


def test_identifiers_are_read_named_or_after_the_column() -> None:
    policy = load(orders=private("o_custkey", o_orderkey={"type": "int", "identifier": "Order"},
                                 o_clerk={"type": "text", "identifier": True}, o_comment={"type": "text", "identifier": False},
                                 o_total={"type": "float"}))
    columns = table(policy, "orders").columns
    assert columns["o_orderkey"].identifier == "order"
    assert columns["o_clerk"].identifier == "o_clerk"
    assert columns["o_comment"].identifier is None
    assert columns["o_total"].identifier is None
    assert columns["o_custkey"].identifier is None


@pytest.mark.parametrize("value", ["", "an order", 1, 0.5])
def test_an_identifier_is_true_or_a_name(value: object) -> None:
    with pytest.raises(CatalogError, match="identifier"):
        load(orders=private("o_custkey", o_orderkey={"type": "int", "identifier": value}))


def test_the_privacy_unit_is_no_identifier() -> None:
    with pytest.raises(CatalogError, match="privacy unit"):
        load(orders={"privacy_unit": "o_custkey", "columns": {"o_custkey": {"type": "int", "identifier": True}}})


def test_a_public_table_declares_no_identifier() -> None:
    with pytest.raises(CatalogError, match="private tables"):
        load(part={"public": True, "columns": {"p_partkey": {"type": "int", "identifier": "part"}}})
