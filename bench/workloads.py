"""The correlated counting workload shared by bench/median_mechanism.py and the layer's utility test.

Queries are conjunctions over column codes: drill-downs (a 2-D range, then an equality, then a
range) and overlapping ranges on pairs of columns. One copy, so the benchmark measures the
workload the test asserts on.
"""

from __future__ import annotations

import numpy as np


def conj_mask(sizes: list[int], sets: list[list[int] | None]) -> np.ndarray:
    """Cells of a conjunction over codes (None: the column is unconstrained, NULL included)."""
    mask = np.ones(1, dtype=bool)
    for size, allowed in zip(sizes, sets):
        column = np.zeros(size + 1, dtype=bool)
        if allowed is None:
            column[:] = True
        else:
            column[allowed] = True
        mask = np.outer(mask, column).ravel()
    return mask


def workload(sizes: list[int], count: int, seed: int, pairs: list[tuple[int, int]]) -> list[list[list[int] | None]]:
    """`count` queries from a seeded generator (public randomness: this is a workload, not noise)."""
    rng = np.random.default_rng(seed)
    queries: list[list[list[int] | None]] = []

    def span(c: int) -> list[int]:
        a = int(rng.integers(sizes[c]))
        b = int(rng.integers(a, min(sizes[c], a + max(2, sizes[c] // 2))))
        return list(range(a, b + 1))

    while len(queries) < count:
        i, j = pairs[int(rng.integers(len(pairs)))]
        sets: list[list[int] | None] = [None] * len(sizes)
        if rng.random() < 0.5:  # a drill-down: a 2-D range, then an equality, then a range
            sets[i], sets[j] = span(i), span(j)
            queries.append(list(sets))
            rest = [x for x in range(len(sizes)) if x not in (i, j)]
            c = rest[int(rng.integers(len(rest)))]
            sets[c] = [int(rng.integers(sizes[c]))]
            queries.append(list(sets))
            last = [x for x in rest if x != c]
            if last:  # a third step needs a third column
                sets[last[0]] = span(last[0])
                queries.append(list(sets))
        else:  # overlapping ranges on a pair
            sets[i], sets[j] = span(i), span(j)
            queries.append(list(sets))
    return queries[:count]
