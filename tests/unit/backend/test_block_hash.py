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
    """The documented rule: x = u mod P, then x -> (a x + b) mod P, x ^ (x >> 16), (c x + d) mod P,
    x ^ (x >> 15), with a, b, c, d the HashBits of the seed and 1..4, mod P."""
    a, b, c, d = (int(hashlib.md5(f"{seed}:{i}".encode()).hexdigest()[:15], 16) % BLOCK_PRIME for i in (1, 2, 3, 4))
    x = (a * (unit % BLOCK_PRIME) + b) % BLOCK_PRIME  # Python's % is already in [0, P)
    x ^= x >> 16
    x = (c * x + d) % BLOCK_PRIME
    return x ^ (x >> 15)


@pytest.mark.parametrize("seed", [0, 20261122, 2**62 - 1])
def test_integer_units_follow_the_definition_without_overflow(seed: int) -> None:
    select = exp.select(exp.alias_(block_hash(exp.column("u"), "int"), "h")).from_(
        exp.Unnest(expressions=[exp.cast(exp.Array(expressions=[exp.Literal.number(u) for u in EDGES]), "BIGINT[]")],
                   alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[exp.to_identifier("u")])))
    rows = duckdb.connect().execute(render(select, "duckdb"), {"mode_seed": seed}).fetchall()
    assert [r[0] for r in rows] == [defined(seed, u) for u in EDGES]
    assert all(0 <= r[0] < 2**31 for r in rows)


def test_the_seed_changes_the_partition() -> None:
    # Negative control for a hash that ignores the seed: two seeds split 1,000 persons differently.
    blocks = [[defined(seed, u) % 16 for u in range(1000)] for seed in (1, 2)]
    assert blocks[0] != blocks[1]
    assert all(30 < blocks[0].count(b) < 100 for b in range(16))  # about 62 each: a spread-out partition


def test_other_units_keep_the_keyed_md5() -> None:
    text = render(block_hash(exp.column("u"), "text"), "duckdb")
    assert text == "CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($mode_seed AS TEXT), CAST(u AS TEXT))), 1, 15) AS BIGINT)"


def test_sequential_ids_get_random_like_blocks() -> None:
    # The first round alone, (a u + b) mod P, puts sequential ids on a lattice: block counts of
    # ids 0..3999 over 16 blocks are then far more even than random (binomial sd about 15). The
    # xor-shift rounds make them random-like: a chi-square near its 15 degrees of freedom, not ~0.
    seed = 20261122
    counts = [0] * 16
    for u in range(4000):
        counts[defined(seed, u) % 16] += 1
    chi2 = sum((c - 250) ** 2 / 250 for c in counts)
    assert 3 < chi2 < 40, chi2
