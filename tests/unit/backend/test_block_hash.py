"""MODE's subsample assignment (backend/sql/robust_sql.py block_hash) on DuckDB, against its definition.

tests/spark/test_parity.py checks that Spark assigns the same blocks.
"""

from __future__ import annotations

import hashlib

import duckdb
import pytest
from sqlglot import exp

from dpsql.backend.sql.engine_dialects import render
from dpsql.backend.sql.robust_sql import BLOCK_MASK, BLOCK_X, block_hash, block_hash_layers

EDGES = [0, 1, -1, 7, -7, BLOCK_MASK - 1, BLOCK_MASK, BLOCK_MASK + 1, -BLOCK_MASK, 2**31, 2**40 + 3, -(2**40) - 3,
         2**62, 2**63 - 1, -(2**63)]


def defined(seed: int, unit: int) -> int:
    """The documented rule: x = (u ^ (u >> 31) ^ (u >> 62)) & M (M = 2^31 - 1, >> arithmetic),
    then x -> ((x ^ k1) * a1) & M, x ^ (x >> 16), ((x ^ k2) * a2) & M, x ^ (x >> 15), with
    k1, a1, k2, a2 the HashBits of the seed and 1..4, & M, the multipliers made odd."""
    k1, a1, k2, a2 = (int(hashlib.md5(f"{seed}:{i}".encode()).hexdigest()[:15], 16) & BLOCK_MASK for i in (1, 2, 3, 4))
    a1, a2 = a1 | 1, a2 | 1
    x = (unit ^ (unit >> 31) ^ (unit >> 62)) & BLOCK_MASK  # Python's >> and & act on two's complement too
    x = ((x ^ k1) * a1) & BLOCK_MASK
    x ^= x >> 16
    x = ((x ^ k2) * a2) & BLOCK_MASK
    return x ^ (x >> 15)


def _edges() -> exp.Expr:
    return exp.Unnest(expressions=[exp.cast(exp.Array(expressions=[exp.Literal.number(u) for u in EDGES]), "BIGINT[]")],
                      alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[exp.to_identifier("u")]))


@pytest.mark.parametrize("seed", [0, 20261122, 2**62 - 1])
def test_integer_units_follow_the_definition_without_overflow(seed: int) -> None:
    select = exp.select(exp.alias_(block_hash(exp.column("u"), "int"), "h")).from_(_edges())
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
    # One keyed round alone puts sequential ids on a lattice: block counts of ids 0..3999 over 16
    # blocks are then far from random (binomial sd about 15). The second round makes them
    # random-like: a chi-square near its 15 degrees of freedom, neither ~0 nor huge.
    seed = 20261122
    counts = [0] * 16
    for u in range(4000):
        counts[defined(seed, u) % 16] += 1
    chi2 = sum((c - 250) ** 2 / 250 for c in counts)
    assert 3 < chi2 < 40, chi2


@pytest.mark.parametrize(("blocks", "ids"), [(16, range(4000)), (200, range(10**6, 10**6 + 7 * 8000, 7)), (1744, range(34880))])
def test_block_counts_spread_like_random_subsamples_over_seeds(blocks: int, ids: range) -> None:
    # Over 20 seeds the chi-square of the block counts of sequential (or strided) ids averages its
    # degrees of freedom B - 1 (standard error sqrt(2 (B - 1) / 20)); one keyed round alone is
    # lattice-like and misses it by far for most seeds. Tolerance: 5 standard errors.
    expected = len(ids) / blocks
    chi2s = []
    for seed in range(20):
        counts = [0] * blocks
        for u in ids:
            counts[defined(seed, u) % blocks] += 1
        chi2s.append(sum((c - expected) ** 2 / expected for c in counts))
    mean, df = sum(chi2s) / len(chi2s), blocks - 1
    assert abs(mean - df) < 5 * (2 * df / len(chi2s)) ** 0.5, (mean, df)


def test_the_layers_nested_as_subqueries_equal_the_expression() -> None:
    # mode_select nests block_hash_layers as subqueries; block_hash inlines them: the same values.
    unit = exp.column("u")
    nested: exp.Select = exp.select(unit.copy(), exp.alias_(block_hash_layers(unit, "int")[0], BLOCK_X)).from_(_edges())
    for i, layer in enumerate(block_hash_layers(unit, "int")[1:]):
        nested = exp.select("u", exp.alias_(layer, BLOCK_X)).from_(nested.subquery(f"l{i}"))
    inlined = exp.select(unit.copy(), exp.alias_(block_hash(unit.copy(), "int"), BLOCK_X)).from_(_edges())
    con = duckdb.connect()
    seed = {"mode_seed": 2**61 + 5}
    assert con.execute(render(nested, "duckdb"), seed).fetchall() == con.execute(render(inlined, "duckdb"), seed).fetchall()
