"""`join_max_rows`: a private table's limit on one person's rows in a join (docs/policy-reference.md)."""

from __future__ import annotations

import pytest

from dpsql.catalog.loader import policy_from_dict
from dpsql.errors import CatalogError

BUDGET = {"epsilon": 1.0, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 1e-8}


def policy(**limits: object) -> dict[str, object]:
    table = {"privacy_unit": "pid", "max_rows": 3, **limits, "columns": {"pid": {"type": "int"}}}
    return {"budget": BUDGET, "tables": {"visits": table}}


def test_join_max_rows_is_read_and_defaults_to_none() -> None:
    assert policy_from_dict(policy(join_max_rows=4)).table("visits").join_max_rows == 4  # type: ignore[union-attr]
    assert policy_from_dict(policy()).table("visits").join_max_rows is None  # type: ignore[union-attr]


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "4"])
def test_join_max_rows_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(CatalogError, match="join_max_rows"):
        policy_from_dict(policy(join_max_rows=value))


def test_a_public_table_has_no_join_max_rows() -> None:
    spec = {"budget": BUDGET, "tables": {"depts": {"public": True, "join_max_rows": 2, "columns": {"name": {"type": "text"}}}}}
    with pytest.raises(CatalogError, match="join_max_rows"):
        policy_from_dict(spec)
