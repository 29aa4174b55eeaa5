"""sum_tails: 95% half-widths of weighted sums of discrete Laplace/Gaussian noises, against exact cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpsql.mechanisms import sum_tails
from dpsql.mechanisms.sampling import discrete_laplace_ci


@pytest.mark.parametrize("scale", [3, 20, 1000, 3e7])
def test_one_laplace_term_is_its_exact_interval_within_the_rounding(scale: float) -> None:
    exact = discrete_laplace_ci(Fraction(scale))
    got = sum_tails.half_width(((1.0, "laplace", float(scale)),))
    assert exact <= got <= exact * 1.02 + 1  # never below the exact quantile (valid); 1% rounding slack


def test_a_weighted_sum_is_narrower_than_one_release_and_wider_than_its_normal_approximation() -> None:
    t = 100.0
    child = ((12 / 13, "laplace", t), (1 / 13, "laplace", t)) + tuple((-1 / 13, "laplace", t) for _ in range(11))
    got = sum_tails.half_width(child)
    sd = (sum(w * w for w, _, _ in child) * sum_tails.variance("laplace", t)) ** 0.5
    assert 1.96 * sd < got < discrete_laplace_ci(Fraction(100))


def test_chernoff_alone_is_valid_but_wider() -> None:
    term = ((1.0, "laplace", 10.0),)
    assert sum_tails.chernoff_width(term, 0.05) > sum_tails.half_width(term) >= discrete_laplace_ci(Fraction(10)) - 1


def test_gaussian_terms() -> None:
    assert 1.96 * 100 <= sum_tails.half_width(((1.0, "gaussian", 100.0),)) <= 1.96 * 100 * 1.02 + 1
    assert 1.96 * 1e6 <= sum_tails.half_width(((1.0, "gaussian", 1e6),)) <= 1.96 * 1e6 * 1.02
