"""The privacy core: noise scales against the note's formulas (§2.2), the threshold redraw rule,
halting, fresh answer noise, and the public calibration (§2.2, §2.3)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest

from dpsql.mechanisms import sparse_vector as sv
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sparse_vector import (
    SIZE_SHARE,
    SVT_SHARE,
    SparseVector,
    answer_noise,
    calibrate,
    laplace_difference_tail,
    rho_from_epsilon_delta,
    size_noise,
)

EPS = Fraction(3, 10)
DELTA = Fraction(1, 10**6)


def pure(**kw: object) -> sv.SVTCalibration:
    args = {"mode": "pure", "epsilon": EPS, "delta": Fraction(0), "accuracy": Fraction(10000), "sensitivity": 1}
    args.update(kw)
    return calibrate(**args)  # type: ignore[arg-type]


def zcdp(**kw: object) -> sv.SVTCalibration:
    args = {"mode": "zcdp", "epsilon": EPS, "delta": DELTA, "accuracy": Fraction(10000), "sensitivity": 1}
    args.update(kw)
    return calibrate(**args)  # type: ignore[arg-type]


# --- scales against the formulas ---------------------------------------------------------------


@pytest.mark.parametrize("sensitivity", [1, 3])
def test_pure_scales_follow_lyu_su_li(sensitivity: int) -> None:
    cal = pure(sensitivity=sensitivity, accuracy=Fraction(10000 * sensitivity))
    c, d = cal.cap, sensitivity
    assert cal.epsilon_size + cal.epsilon_svt + cal.epsilon_answers == EPS  # exact: the reservation is the whole cost
    assert cal.epsilon_size == EPS * SIZE_SHARE and cal.epsilon_svt == (EPS - cal.epsilon_size) * SVT_SHARE
    eps1 = d / cal.threshold_scale  # threshold noise Lap(Δ/ε1)
    eps2 = 2 * c * d / cal.query_scale  # query noise Lap(2cΔ/ε2)
    assert eps1 + eps2 == cal.epsilon_svt
    assert math.isclose(float(eps2 / eps1), (2 * c) ** (2 / 3), rel_tol=1e-4)  # the optimal split 1 : (2c)^(2/3)
    assert cal.answer_scale == c * d / cal.epsilon_answers  # hard answers Lap(cΔ/ε_ans), basic composition
    assert cal.size_scale == d / cal.epsilon_size
    assert cal.cost.epsilon == EPS and cal.cost.delta == 0


def test_zcdp_scales_and_conversion() -> None:
    cal = zcdp(sensitivity=2, accuracy=Fraction(20000))
    c, d, rho = cal.cap, 2, cal.rho
    assert rho is not None and cal.round_epsilon is not None
    with localcontext() as ctx:
        ctx.prec = 60
        r, log_inv = Decimal(rho.numerator) / Decimal(rho.denominator), -Decimal(DELTA.numerator / DELTA.denominator).ln()
        assert r + 2 * (r * log_inv).sqrt() <= Decimal(EPS.numerator) / Decimal(EPS.denominator)  # ρ-zCDP ⇒ (ε, δ)
    rho_size = rho * SIZE_SHARE
    rho_svt = (rho - rho_size) * SVT_SHARE
    rho_ans = rho - rho_size - rho_svt
    eps_r = cal.round_epsilon
    assert c * eps_r * eps_r / 2 <= rho_svt  # c rounds of ε_r-DP AboveThreshold, ε_r²/2-zCDP each
    assert c * eps_r * eps_r / 2 > rho_svt * Fraction(999, 1000)  # and not needlessly small
    eps1, eps2 = d / cal.threshold_scale, 2 * d / cal.query_scale  # per round: Lap(Δ/ε_r1), Lap(2Δ/ε_r2)
    assert eps1 + eps2 == eps_r
    assert math.isclose(float(eps2 / eps1), 2 ** (2 / 3), rel_tol=1e-4)
    assert cal.answer_sigma2 == Fraction(c * d * d) / (2 * rho_ans)  # N(0, σ²), σ² = cΔ₂²/(2ρ_ans)
    assert cal.size_sigma2 == Fraction(d * d) / (2 * rho_size)
    assert cal.cost.epsilon == EPS and cal.cost.delta == DELTA


def test_calibration_matches_the_note() -> None:
    # §2.2's measured table (β = 0.05, half the budget to the SVT): n = 1e6, ε = 0.3, A = 1e4.
    assert 150 <= pure().cap <= 160
    assert 400 <= zcdp().cap <= 440
    assert 80 <= pure(expected_queries=20000).cap <= 95
    assert 195 <= zcdp(expected_queries=20000).cap <= 220
    # n = 1e5, ε = 1, A = 1e3: the budget-starved regime.
    assert 44 <= pure(epsilon=Fraction(1), accuracy=Fraction(1000)).cap <= 52
    assert 40 <= zcdp(epsilon=Fraction(1), accuracy=Fraction(1000)).cap <= 50


@pytest.mark.parametrize("make", [pure, zcdp])
def test_margin_and_threshold_honour_beta(make) -> None:  # type: ignore[no-untyped-def]
    cal = make()
    # Easy means e + ν < T + ρ; e > A then needs ρ − ν >= A − T + 1 = margin + 1.
    assert laplace_difference_tail(cal.threshold_scale, cal.query_scale, cal.margin + 1) <= 0.05
    assert laplace_difference_tail(cal.threshold_scale, cal.query_scale, cal.margin) > 0.05  # smallest such margin
    assert cal.threshold == cal.accuracy - cal.margin and cal.margin <= cal.accuracy // 2
    # One more slot would push the margin past A/2 (margin-only calibration).
    bigger = make(cap=cal.cap + 1)
    assert bigger.accuracy - bigger.threshold >= 0 and sv._margin(bigger.threshold_scale, bigger.query_scale, 0.05) > cal.accuracy // 2


def test_expected_queries_rule() -> None:
    cal = zcdp(expected_queries=20000)
    assert 20000 * cal.false_hard_rate <= cal.cap / 2


def test_laplace_difference_tail_against_brute_force() -> None:
    def pmf(b: float, x: int) -> float:
        p = math.exp(-1 / b)
        return (1 - p) / (1 + p) * p ** abs(x)

    for b1, b2 in [(1.0, 1.0), (2.0, 5.0), (7.0, 3.0), (10.0, 10.000001)]:
        for t in (-4, 0, 1, 3, 25):
            brute = sum(pmf(b1, x) * pmf(b2, y) for x in range(-400, 401) for y in range(-400, 401) if x - y >= t)
            assert math.isclose(laplace_difference_tail(b1, b2, t), brute, rel_tol=1e-9, abs_tol=1e-12)


def test_rho_conversion_inverts_bun_steinke() -> None:
    for eps, delta in [(Fraction(1), Fraction(1, 10**6)), (Fraction(3, 10), Fraction(1, 10**9)), (Fraction(5), Fraction(1, 100))]:
        rho = rho_from_epsilon_delta(eps, delta)
        value = float(rho) + 2 * math.sqrt(float(rho) * math.log(1 / float(delta)))
        assert value <= float(eps) and value > float(eps) * (1 - 1e-6)


def test_too_little_budget_gives_no_slot() -> None:
    assert pure(epsilon=Fraction(1, 1000), accuracy=Fraction(10)).cap == 0


def test_calibration_reads_no_data() -> None:
    # The calibration's inputs are the policy's numbers only: the signature has no data argument,
    # and the same inputs give the same output (it is a pure function of public values).
    assert pure() == pure() and zcdp(expected_queries=500) == zcdp(expected_queries=500)


# --- the sparse vector itself ---------------------------------------------------------------------


class Recorder:
    """Intercepts the samplers the sparse vector module uses; returns scripted values."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, values: list[int] | None = None) -> None:
        self.calls: list[tuple[str, Fraction]] = []
        self.values = list(values or [])
        monkeypatch.setattr(sv, "discrete_laplace", self.laplace)
        monkeypatch.setattr(sv, "discrete_gaussian", self.gaussian)

    def laplace(self, scale: Fraction, rng: object) -> int:
        self.calls.append(("laplace", scale))
        return self.values.pop(0) if self.values else 0

    def gaussian(self, sigma2: Fraction, rng: object) -> int:
        self.calls.append(("gaussian", sigma2))
        return self.values.pop(0) if self.values else 0


def test_pure_threshold_is_drawn_once_and_query_noise_every_test(monkeypatch: pytest.MonkeyPatch) -> None:
    cal = pure(cap=3, threshold=100)
    rec = Recorder(monkeypatch)
    svt = SparseVector(cal, SeededRandomSource(1))
    assert rec.calls == [("laplace", cal.threshold_scale)]
    results = [svt.test(s) for s in (0, 500, 99, 100, 1000)]
    assert results == [False, True, False, True, True]
    assert rec.calls[1:] == [("laplace", cal.query_scale)] * 5  # never a new threshold in pure mode
    assert svt.halted and svt.slots_left == 0
    with pytest.raises(RuntimeError):
        svt.test(0)  # no test after halting


def test_zcdp_redraws_the_threshold_after_each_hard_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    cal = zcdp(cap=3, threshold=100)
    rec = Recorder(monkeypatch)
    svt = SparseVector(cal, SeededRandomSource(1))
    t, q = ("laplace", cal.threshold_scale), ("laplace", cal.query_scale)
    svt.test(0)
    svt.test(500)  # hard: a new round starts with a new threshold
    svt.test(0)
    svt.test(500)
    svt.test(500)  # the last slot: halted, nothing more to draw
    assert rec.calls == [t, q, q, t, q, q, t, q]


def test_threshold_noise_moves_the_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    cal = pure(cap=5, threshold=100)
    Recorder(monkeypatch, values=[40, 0, 0, -1])  # ρ = 40, then query noises
    svt = SparseVector(cal, SeededRandomSource(1))
    assert [svt.test(139), svt.test(140), svt.test(141)] == [False, True, True]  # hard iff e + ν >= T + ρ


def test_answer_and_size_noise_are_fresh_draws_at_the_accounted_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(monkeypatch)
    p, z = pure(), zcdp()
    answer_noise(p, SeededRandomSource(1))
    answer_noise(z, SeededRandomSource(1))
    size_noise(p, SeededRandomSource(1))
    size_noise(z, SeededRandomSource(1))
    assert rec.calls == [("laplace", p.answer_scale), ("gaussian", z.answer_sigma2),
                         ("laplace", p.size_scale), ("gaussian", z.size_sigma2)]


def test_statistic_must_be_an_integer() -> None:
    svt = SparseVector(pure(cap=2, threshold=10), SeededRandomSource(1))
    with pytest.raises(TypeError):
        svt.test(1.5)  # type: ignore[arg-type]


def test_repr_hides_the_threshold_noise() -> None:
    svt = SparseVector(pure(cap=2, threshold=10), SeededRandomSource(3))
    secret = svt._rho
    text = repr(svt)
    assert "rho" not in text and f"={secret})" not in text and "threshold" not in text
    assert not hasattr(svt, "__dict__")  # slots only: no attribute dump
