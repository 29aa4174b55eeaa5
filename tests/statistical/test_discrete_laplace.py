"""Distribution tests for the exact samplers (docs/privacy-model.md, "Noise").

H0: the draws of `discrete_laplace(scale, rng)` follow the discrete Laplace pmf
P[X = x] = (1 - p) / (1 + p) * p^|x| with p = exp(-1/scale).

Each check draws N = 20,000 samples, bins them (every integer near zero gets its own bin; the
tails are pooled so that every expected count is at least 5, the usual validity condition for
the chi-square approximation), and rejects H0 when the chi-square p-value is below
P_THRESHOLD = 1e-4. If the sampler is correct, each check fails with probability 1e-4 at a fresh
seed, so the 14 positive checks in this file (discrete Laplace at 3 scales, with the system
source at 2 scales, at 2 huge scales; bernoulli_exp at 4 rates; geometric_exp at 3 rates) have a
combined false-alarm probability below 1.4e-3. Seeded checks are deterministic: they pass or fail
the same way every run. The two SystemRandomSource checks draw fresh OS randomness and so fail
with probability 1e-4 each per run even for a correct sampler.

The negative controls feed the same check samples drawn at a wrong scale and assert that it
rejects them, so the check is shown to have power against realistic mistakes (a scale off by a
factor of 2, or by 25%); another feeds it the right sampler driven by a modulo-biased source.

The expected probabilities come from the closed form, written out here independently of
`dpsql.mechanisms.sampling`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction

import pytest
from scipy import stats

from dpsql.mechanisms.rng import RandomSource, SeededRandomSource, SystemRandomSource
from dpsql.mechanisms.sampling import bernoulli_exp, discrete_laplace, geometric_exp
from tests.unit.mechanisms.test_system_random_source import ModuloSource  # the same biased source as the unit checks

pytestmark = pytest.mark.statistical

N = 20_000
P_THRESHOLD = 1e-4
MIN_EXPECTED = 5.0
SCALES = [Fraction(1), Fraction(5, 2), Fraction(10)]


def upper_tail(scale: Fraction, k: int) -> float:
    """P(X >= k) under H0."""
    p_log = -1 / float(scale)  # log p
    if k >= 1:
        return math.exp(k * p_log) / (1 + math.exp(p_log))
    return 1 - upper_tail(scale, 1 - k)


def integer_edges(upper: Callable[[int], float], n: int, first: int) -> list[int]:
    """Cut points first, first + 1, ..., K + 1: one bin per integer from `first` to K.

    K is the largest value that keeps both the last single-integer bin and the pooled tail
    [K + 1, inf) at an expected count of at least MIN_EXPECTED.
    """
    edges = [first]
    while True:
        c = edges[-1]
        if n * (upper(c) - upper(c + 1)) < MIN_EXPECTED or n * upper(c + 1) < MIN_EXPECTED:
            return edges
        edges.append(c + 1)


def bin_edges(scale: Fraction, n: int) -> list[int]:
    """Cut points c_0 < ... < c_m; bins (-inf, c_0), [c_i, c_{i+1}), [c_m, inf).

    Every integer -K..K is its own bin, with K as large as keeps each of them and both pooled
    tails (X < -K and X > K) at an expected count of at least MIN_EXPECTED.
    """
    right = integer_edges(lambda k: upper_tail(scale, k), n, 0)
    k = right[-1] - 1
    return list(range(-k, k + 2))


def quantile_edges(scale: Fraction, bins: int) -> list[int]:
    """Integer cut points near the H0 quantiles, for scales too large for per-integer bins."""
    edges = set()
    for i in range(1, bins):
        q = i / bins
        # Continuous-Laplace quantile; rounding to an integer keeps the bins exact under H0.
        x = float(scale) * (math.log(2 * q) if q < 0.5 else -math.log(2 * (1 - q)))
        edges.add(round(x))
    return sorted(edges)


def chi_square_pvalue(samples: Sequence[int], edges: Sequence[int], upper: Callable[[int], float]) -> float:
    """p-value of the chi-square test that `samples` have the upper tail P(X >= k) = upper(k)."""
    uppers = [1.0] + [upper(c) for c in edges] + [0.0]
    probs = [uppers[i] - uppers[i + 1] for i in range(len(uppers) - 1)]
    expected = [len(samples) * q for q in probs]
    assert min(expected) >= MIN_EXPECTED, "binning must keep every expected count >= 5"
    observed = [0] * len(probs)
    counts = Counter(samples)
    for value, how_many in counts.items():
        # Bin index = number of cut points <= value.
        lo, hi = 0, len(edges)
        while lo < hi:
            mid = (lo + hi) // 2
            if edges[mid] <= value:
                lo = mid + 1
            else:
                hi = mid
        observed[lo] += how_many
    # Expected counts sum to N up to float rounding; rescale so scipy's sum check passes.
    total = sum(expected)
    expected = [e * len(samples) / total for e in expected]
    return float(stats.chisquare(observed, expected).pvalue)


def draw(scale: Fraction, rng: RandomSource, n: int = N) -> list[int]:
    return [discrete_laplace(scale, rng) for _ in range(n)]


def check(samples: Sequence[int], scale: Fraction) -> float:
    """The one H0 check used by positive and negative tests alike."""
    return chi_square_pvalue(samples, bin_edges(scale, len(samples)), lambda k: upper_tail(scale, k))


@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_discrete_laplace_follows_its_pmf(scale: Fraction) -> None:
    seed = 20_240_601 + scale.numerator * 1000 + scale.denominator
    pvalue = check(draw(scale, SeededRandomSource(seed)), scale)
    assert pvalue > P_THRESHOLD, f"H0 rejected at scale {scale}: p = {pvalue:.3g}"


@pytest.mark.parametrize("scale", SCALES, ids=str)
@pytest.mark.parametrize("factor", [Fraction(1, 2), Fraction(5, 4)], ids=["half", "x1.25"])
def test_check_rejects_the_wrong_scale(scale: Fraction, factor: Fraction) -> None:
    seed = 31_337 + scale.numerator * 1000 + scale.denominator
    samples = draw(scale * factor, SeededRandomSource(seed))
    pvalue = check(samples, scale)
    assert pvalue < P_THRESHOLD, f"wrong-scale samples passed at scale {scale}: p = {pvalue:.3g}"


@pytest.mark.parametrize("scale", [Fraction(5, 2), Fraction(10)], ids=str)
def test_discrete_laplace_with_the_system_source(scale: Fraction) -> None:
    # SystemRandomSource serves rejection samples from a buffer of os.urandom bytes.
    pvalue = check(draw(scale, SystemRandomSource()), scale)
    assert pvalue > P_THRESHOLD, f"H0 rejected with SystemRandomSource: p = {pvalue:.3g}"


@pytest.mark.parametrize("scale", [Fraction(5, 2), Fraction(10)], ids=str)
def test_check_rejects_a_modulo_biased_source(scale: Fraction) -> None:
    # Negative control for the check above: the right sampler at the right scale, fed by a
    # source that reduces modulo n (randbelow(3) then returns 0 half the time, not a third).
    pvalue = check(draw(scale, ModuloSource(2_024)), scale)
    assert pvalue < P_THRESHOLD, f"a modulo-biased source passed at scale {scale}: p = {pvalue:.3g}"


@pytest.mark.parametrize("scale", [Fraction(3 * 10**11), Fraction(10**12, 7)], ids=["3e11", "1e12/7"])
def test_discrete_laplace_huge_scales(scale: Fraction) -> None:
    # Exercises the uniform draw over a 12-digit denominator. Bins at 40 H0 quantiles: the
    # expected count per bin is about N/40 = 500.
    edges = quantile_edges(scale, 40)
    samples = draw(scale, SeededRandomSource(77))
    assert chi_square_pvalue(samples, edges, lambda k: upper_tail(scale, k)) > P_THRESHOLD
    # Negative control on the same bins.
    wrong = draw(scale * Fraction(9, 10), SeededRandomSource(78))
    assert chi_square_pvalue(wrong, edges, lambda k: upper_tail(scale, k)) < P_THRESHOLD


@pytest.mark.parametrize(
    "gamma", [Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(7)], ids=str
)
def test_bernoulli_exp_rate(gamma: Fraction) -> None:
    # H0: True with probability exp(-gamma); exact two-sided binomial test at 1e-4.
    source = SeededRandomSource(4_000 + gamma.numerator)
    hits = sum(bernoulli_exp(gamma, source) for _ in range(N))
    assert stats.binomtest(hits, N, math.exp(-float(gamma))).pvalue > P_THRESHOLD


@pytest.mark.parametrize("x", [Fraction(1, 3), Fraction(5, 2), Fraction(7, 1000)], ids=str)
def test_geometric_exp_follows_its_pmf(x: Fraction) -> None:
    # H0: P[k] = (1 - q) q^k for k >= 0, q = exp(-x), so P(X >= k) = q^k. Same chi-square check,
    # one bin per integer from 0 with the upper tail pooled.
    q = math.exp(-float(x))

    def upper(k: int) -> float:
        return q**k if k > 0 else 1.0

    source = SeededRandomSource(5_000 + x.denominator)
    samples = [geometric_exp(x, source) for _ in range(N)]
    edges = integer_edges(upper, N, 1)
    assert chi_square_pvalue(samples, edges, upper) > P_THRESHOLD
