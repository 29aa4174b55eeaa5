"""MODE's subsample assignment (backend/robust_sql.py block_hash) on DuckDB, against its definition.

tests/spark/test_parity.py checks that Spark assigns the same blocks.
"""

from __future__ import annotations

import hashlib

import duckdb
import pytest
from sqlglot import exp

from dpsql.backend.dialects import render
from dpsql.backend.robust_sql import BLOCK_PRIME, block_hash

EDGES = [0, 1, -1, 7, -7, BLOCK_PRIME - 1, BLOCK_PRIME, BLOCK_PRIME + 1, -BLOCK_PRIME, 2**31, 2**40 + 3, -(2**40) - 3,
         2**62, 2**63 - 1, -(2**63)]


def defined(seed: int, unit: int) -> int:
    """The documented rule: (a * (u mod P) + b) mod P, a and b HashBits of the seed and 1, 2."""
    a, b = (int(hashlib.md5(f"{seed}:{i}".encode()).hexdigest()[:15], 16) % BLOCK_PRIME for i in (1, 2))
    return (a * (unit % BLOCK_PRIME) + b) % BLOCK_PRIME  # Python's % is already in [0, P)


@pytest.mark.parametrize("seed", [0, 20261122, 2**62 - 1])
def test_integer_units_follow_the_definition_without_overflow(seed: int) -> None:
    select = exp.select(exp.alias_(block_hash(exp.column("u"), "int"), "h")).from_(
        exp.Unnest(expressions=[exp.cast(exp.Array(expressions=[exp.Literal.number(u) for u in EDGES]), "BIGINT[]")],
                   alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[exp.to_identifier("u")])))
    rows = duckdb.connect().execute(render(select, "duckdb"), {"mode_seed": seed}).fetchall()
    assert [r[0] for r in rows] == [defined(seed, u) for u in EDGES]
    assert all(0 <= r[0] < BLOCK_PRIME for r in rows)


def test_the_seed_changes_the_partition() -> None:
    # Negative control for a hash that ignores the seed: two seeds split 1,000 persons differently.
    blocks = [[defined(seed, u) % 16 for u in range(1000)] for seed in (1, 2)]
    assert blocks[0] != blocks[1]
    assert all(30 < blocks[0].count(b) < 100 for b in range(16))  # about 62 each: a spread-out partition


def test_other_units_keep_the_keyed_md5() -> None:
    text = render(block_hash(exp.column("u"), "text"), "duckdb")
    assert text == "CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($mode_seed AS TEXT), CAST(u AS TEXT))), 1, 15) AS BIGINT)"
