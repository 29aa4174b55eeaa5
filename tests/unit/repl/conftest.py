"""A policy with two private tables and a public one, so completion can tell them apart."""

from __future__ import annotations

import tomllib
from decimal import Decimal

import pytest

from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Policy
from tests.conftest import make_policy_text

EXTRA_TABLES = """
[tables.visits]
privacy_unit = "patient_id"
max_rows = 5
max_groups = 1

[tables.visits.columns]
patient_id = { type = "int" }
cost = { type = "float", lower = 0, upper = 1000, precision = 0.01 }
ward = { type = "text", values = ["a", "b", "c", "d", "e", "f", "g"] }

[tables.wards]
public = true

[tables.wards.columns]
ward = { type = "text" }
floor = { type = "int" }
"""


@pytest.fixture(scope="session")
def policy() -> Policy:
    """The demo `people` table, a private `visits` table and a public `wards` table (no data)."""
    text = make_policy_text(source=None, extra=EXTRA_TABLES)
    return policy_from_dict(tomllib.loads(text, parse_float=Decimal))
