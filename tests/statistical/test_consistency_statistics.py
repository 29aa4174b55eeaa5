"""Reconciled grouping sets (execution/consistency.py): more accurate than the releases, and their
recomputed 95% intervals cover.

Each replicate draws one discrete Laplace release per cell (the project's exact sampler on a
seeded source) around fixed public-key truths, for ROLLUP(a) (12 parts and a total) and
CUBE(a, b) (3 x 4 parts, 3 + 4 margins and a total), and reconciles them as a grouping-set query does.

Accuracy. Hypothesis: the weighted least squares estimate of every cell has a smaller variance
than its release (Gauss-Markov: the release is itself a linear unbiased estimate; the bounds and
the rounding move nothing at these truths, far from 0). Per replicate, D = e_raw^2 - e_rec^2
(of the total; of the parts, averaged over them); the test asserts mean(D) - 3.09 se(D) > 0
(a one-sided z-test at 0.001 over 2,000 independent replicates; the expected gain is 1/13 of a
variance for ROLLUP(a)). Negative control: least squares weighted as if the total were nearly
worthless (its variance times 1e4) replaces the total by the sum of 12 noisy parts (12 times
its variance), and the same test fails on the total.

Coverage. Hypothesis: each reconciled cell lies within its stated half-width of the truth with
probability >= 0.95. Over 2,000 replicates (independent: one cell each), the test fails when the
one-sided 99.9% Clopper-Pearson upper bound of the coverage is below 0.95. Negative control:
the same intervals halved are caught.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsql.execution.consistency import estimate
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sampling import discrete_laplace

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

REPLICATES = 2000
SCALE = Fraction(20)
Z = 3.09  # one-sided 0.001
NOISE = ("laplace", float(SCALE), Fraction(1))


def _design(shape: str) -> tuple[list[list[int]], list[int]]:
    """Per released cell the finest cells it sums, and the finest cells' truths ("small": the
    CUBE design with every part 0, where the noise dwarfs them)."""
    if shape == "small":
        rows, _ = _design("cube")
        return rows, [0] * 12
    if shape == "rollup":
        truths = [60 + 45 * i for i in range(12)]
        return [[i] for i in range(12)] + [list(range(12))], truths
    cells = list(itertools.product(range(3), range(4)))
    truths = [80 + 30 * a + 17 * b for a, b in cells]
    rows = [[i] for i in range(12)]
    rows += [[i for i, (a, _) in enumerate(cells) if a == k] for k in range(3)]
    rows += [[i for i, (_, b) in enumerate(cells) if b == k] for k in range(4)]
    rows.append(list(range(12)))
    return rows, truths


def _runs(shape: str, variances: list[float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Raw errors, reconciled errors, reconciled half-widths (replicates x cells), and the truths."""
    rows, truths = _design(shape)
    true = np.array([sum(truths[i] for i in members) for members in rows], dtype=float)
    raw, rec, widths = [], [], []
    for seed in range(REPLICATES):
        rng = SeededRandomSource(10_000 + seed)
        y = [t + discrete_laplace(SCALE, rng) for t in true]
        values, half = estimate(rows, len(truths), y, [NOISE] * len(rows), 1, variances)
        raw.append(np.array(y) - true)
        rec.append(np.array(values, dtype=float) - true)
        widths.append(half)
    return np.array(raw), np.array(rec), np.array(widths), true


def _gain(raw: np.ndarray, rec: np.ndarray, columns: list[int]) -> tuple[float, float]:
    d = (raw[:, columns] ** 2 - rec[:, columns] ** 2).mean(axis=1)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


def _covers(rec: np.ndarray, widths: np.ndarray, cell: int, factor: float = 1.0) -> float:
    """The one-sided 99.9% Clopper-Pearson upper bound of the coverage of one cell."""
    hits = int(np.sum(np.abs(rec[:, cell]) <= widths[:, cell] * factor))
    return 1.0 if hits == len(rec) else float(stats.beta.ppf(0.999, hits + 1, len(rec) - hits))


@pytest.mark.parametrize("shape", ["rollup", "cube"])
def test_reconciled_cells_are_more_accurate(shape: str) -> None:
    raw, rec, _, true = _runs(shape)
    parts = list(range(12))
    total = len(true) - 1
    for columns in (parts, [total]):
        mean, se = _gain(raw, rec, columns)
        assert mean - Z * se > 0, (shape, columns, mean, se)


def test_total_keeps_its_accuracy_where_parts_are_pinned_at_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Noise-dominated parts (truths 0, noise scale 20): the non-negative fit pins many parts at
    0. Hypothesis: the reconciled total is still more accurate than its release (it is the
    unbiased least-squares total, cut at 0 towards a truth >= 0, with parts fitted under it), by
    the same one-sided z-test at 0.001. Negative control: the plain non-negative fit of every cell
    (the total then carries the pinned parts' upward bias) fails the same test; and the total's
    interval covers (Clopper-Pearson as above)."""
    raw, rec, widths, true = _runs("small")
    total = len(true) - 1
    mean, se = _gain(raw, rec, [total])
    assert mean - Z * se > 0, (mean, se)
    assert _covers(rec, widths, total) >= 0.95 and _covers(rec, widths, 0) >= 0.95

    from dpsql.execution import consistency

    monkeypatch.setattr(consistency, "_top_down", lambda rows, cells, b, y, start, linear: consistency._nnls(b, y, start))
    raw, rec, _, true = _runs("small")
    mean, se = _gain(raw, rec, [total])
    assert not mean - Z * se > 0, (mean, se)


def test_negative_control_misweighted_least_squares_is_caught() -> None:
    rows, _ = _design("rollup")
    variances = [1.0] * (len(rows) - 1) + [1e4]  # the total treated as nearly worthless
    raw, rec, _, true = _runs("rollup", variances)
    mean, se = _gain(raw, rec, [len(true) - 1])
    assert not mean - Z * se > 0, (mean, se)


@pytest.mark.parametrize("shape", ["rollup", "cube"])
def test_recomputed_intervals_cover(shape: str) -> None:
    _, rec, widths, true = _runs(shape)
    raw_width = 60  # the release's own 95% half-width at scale 20 (discrete_laplace_ci)
    for cell in (0, len(true) - 1):
        assert _covers(rec, widths, cell) >= 0.95, (shape, cell)
        assert np.median(widths[:, cell]) < raw_width  # narrower than the unreconciled interval
        assert _covers(rec, widths, cell, factor=0.5) < 0.95, (shape, cell)  # negative control: halved, caught
