"""MODE: the stated confidence is honest, and the stable-histogram mode is (eps, delta)-DP.

Confidence (mechanisms/confidence.py). The guarantee is P(claim false and alpha <= a) <= a for every
level a, over the mechanism's noise. Check: N seeded releases on data where wrong answers are common
(near-ties); x = the releases that are wrong AND claim confidence >= 1 - a; the one-sided
Clopper-Pearson upper bound of x / N at level 1 - ALPHA must be <= a. Under the guarantee this
fails with probability <= ALPHA per check. Each negative control (the gap read as one noise draw,
with no union and no halving; A_samp's p-value at half the scale) must push the Clopper-Pearson
*lower* bound above a: the same check, failed.

Privacy of the stable-histogram mode, mechanism level (as the noisy-max audit in
test_robust_defaults): a pair where the added person's rows create values (only delta protects)
and a pair where they add to an existing near-tied value (only epsilon protects), with the
`violations` check of test_robust_dp; the controls (the threshold of one-row values, a scale
that ignores max_rows) are flagged on their pair.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

from dpsql.mechanisms import confidence, histogram_mode, noisy_max, subsample
from dpsql.mechanisms.confidence import Confident
from dpsql.mechanisms.ptr import REFUSED, PTRTest
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sampling import discrete_laplace, discrete_laplace_upper_tail
from tests.statistical.test_robust_dp import cp_lower, cp_upper, violations

pytestmark = pytest.mark.statistical

RUNS = 6000


def wrong_and_sure(releases: list[tuple[Any, float | None]], truth: Callable[[Any], bool], level: float) -> int:
    """Releases whose value is wrong while they claim confidence >= 1 - level (⊥ counts as neither)."""
    return sum(1 for value, alpha in releases if alpha is not None and not truth(value) and alpha <= level)


# --- report-noisy-max -------------------------------------------------------------------------------

NM_SPEC = noisy_max.NoisyMaxModeSpec(Fraction(1, 10), 3, ("a", "b"))
NM_COUNTS = {"a": 101, "b": 100}  # "a" is the mode by one row: about half the releases are "b"


def _noisy_max_runs(alpha: Callable[[int], float]) -> list[tuple[Any, float | None]]:
    """Each run: the released value and an alpha from the same draws' gap (replayed from the seed,
    and checked against what release_confident states)."""
    out = []
    for seed in range(RUNS):
        released = noisy_max.release_confident(NM_SPEC, NM_COUNTS, SeededRandomSource(seed))
        rng = SeededRandomSource(seed)
        noisy = sorted(((NM_COUNTS[v] + discrete_laplace(NM_SPEC.scale, rng), -i, v) for i, v in enumerate(NM_SPEC.values)),
                       reverse=True)
        gap = noisy[0][0] - noisy[1][0]
        assert released.value == noisy[0][2]
        assert released.confidence == 1.0 - confidence.noisy_max_alpha(NM_SPEC.scale, len(NM_SPEC.values), gap)
        out.append((released.value, alpha(gap)))
    return out


def one_draw_alpha(scale: Fraction) -> Callable[[int], float]:
    """The control: alpha = P(N >= g), as if the gap were a single draw (no union over values, no halving)."""
    return lambda gap: min(1.0, discrete_laplace_upper_tail(scale, gap))


def test_noisy_max_confidence_is_honest_and_the_one_draw_control_is_caught() -> None:
    honest = _noisy_max_runs(lambda gap: confidence.noisy_max_alpha(NM_SPEC.scale, 2, gap))
    assert sum(v == "b" for v, _ in honest) > RUNS / 3  # wrong answers are common here: the test can fail
    for level in (0.05, 0.1, 0.2):
        assert cp_upper(wrong_and_sure(honest, lambda v: v == "a", level), RUNS) <= level, level
    control = _noisy_max_runs(one_draw_alpha(NM_SPEC.scale))
    assert cp_lower(wrong_and_sure(control, lambda v: v == "a", 0.1), RUNS) > 0.1


def test_noisy_max_confidence_is_high_for_a_clear_mode() -> None:
    spec = noisy_max.NoisyMaxModeSpec(Fraction(1, 10), 3, ("north", "south", "east", "west"))
    out = noisy_max.release_confident(spec, {"north": 4000, "south": 3000, "east": 2000, "west": 1000}, SeededRandomSource(1))
    assert out.value == "north" and out.confidence > 0.999


# --- the stable-histogram mode -----------------------------------------------------------------------

HM_SPEC = histogram_mode.HistogramModeSpec(Fraction(1, 2), Fraction(1, 10**6), 3)


def _histogram_runs(alpha: Callable[[int, int], float], counts: dict[str, int]) -> list[tuple[Any, float | None]]:
    """Each run replays release_confident's draws from the seed (stage 1 over the sorted present
    values, then stage 2 over S), checks its value and confidence, and recomputes alpha(|S|, gap)."""
    out: list[tuple[Any, float | None]] = []
    order = sorted(counts)
    for seed in range(RUNS):
        released = histogram_mode.release_confident(HM_SPEC, counts, SeededRandomSource(seed))
        rng = SeededRandomSource(seed)
        kept = [v for v in order if counts[v] + discrete_laplace(HM_SPEC.scale, rng) >= HM_SPEC.threshold]
        if not kept:
            assert released is REFUSED
            out.append((None, None))
            continue
        noisy = sorted(((counts[v] + discrete_laplace(HM_SPEC.scale, rng), -i, v) for i, v in enumerate(kept)), reverse=True)
        runner_up = max(noisy[1][0], HM_SPEC.threshold - 1) if len(noisy) > 1 else HM_SPEC.threshold - 1
        gap = max(noisy[0][0] - runner_up, 0)
        assert isinstance(released, Confident) and released.value == noisy[0][2]
        assert released.confidence == 1.0 - confidence.histogram_alpha(HM_SPEC.scale, len(kept), gap)
        out.append((released.value, alpha(len(kept), gap)))
    return out


def test_histogram_confidence_is_honest_and_the_one_draw_control_is_caught() -> None:
    top = HM_SPEC.threshold + 40  # every value passes the threshold most of the time; "a" leads by one row
    counts = {"a": top + 1, "b": top, "c": top}
    honest = _histogram_runs(lambda s, gap: confidence.histogram_alpha(HM_SPEC.scale, s, gap), counts)
    assert sum(v not in (None, "a") for v, _ in honest) > RUNS / 3
    for level in (0.05, 0.1, 0.2):
        assert cp_upper(wrong_and_sure(honest, lambda v: v == "a", level), RUNS) <= level, level
    control = _histogram_runs(lambda s, gap: one_draw_alpha(HM_SPEC.scale)(gap), counts)
    assert cp_lower(wrong_and_sure(control, lambda v: v == "a", 0.1), RUNS) > 0.1


def test_histogram_confidence_when_the_true_mode_misses_the_threshold() -> None:
    # The mode "a" sits just under T: it is often not kept, and "b" (one row fewer) is released with
    # a gap measured against T - 1. The claim must stay honest when the mode is outside S.
    counts = {"a": HM_SPEC.threshold - 5, "b": HM_SPEC.threshold - 6}
    honest = _histogram_runs(lambda s, gap: confidence.histogram_alpha(HM_SPEC.scale, s, gap), counts)
    assert sum(v == "b" for v, _ in honest) > RUNS / 10
    for level in (0.05, 0.1, 0.2):
        assert cp_upper(wrong_and_sure(honest, lambda v: v == "a", level), RUNS) <= level, level


# --- A_samp -------------------------------------------------------------------------------------------


ASAMP_RUNS = 20000  # one draw per run; the p-value is nearly exact (P(alpha <= 0.1) = 0.084 here), so more runs


def _asamp_runs(spec: subsample.ASampSpec, votes: dict[str, int], scale: Fraction) -> list[tuple[Any, float | None]]:
    """Each run replays the test's one draw: d^ = min(d, C) + Z, and alpha = P(DLap(scale) >= d^)."""
    out: list[tuple[Any, float | None]] = []
    distance = subsample.vote_distance(votes, spec.normaliser, spec.test.cap)
    for seed in range(ASAMP_RUNS):
        released = subsample.release_confident(spec, votes, SeededRandomSource(seed))
        noisy = min(distance, spec.test.cap) + discrete_laplace(spec.test.scale, SeededRandomSource(seed))
        if released is REFUSED:
            assert noisy < spec.test.threshold
            out.append((None, None))
            continue
        assert isinstance(released, Confident)
        assert released.confidence == 1.0 - confidence.stability_alpha(spec.test.scale, noisy)
        out.append((released.value, confidence.stability_alpha(scale, noisy)))
    return out


def test_asamp_confidence_is_a_p_value_and_the_half_scale_control_is_caught() -> None:
    # Votes 7 vs 6: d = 0, so the claim "no single person changes the winner" is false in every
    # release; delta is large so that releases happen (P(pass) = P(Z >= tau) <= delta).
    spec = subsample.ASampSpec(PTRTest(Fraction(1, 2), Fraction(3, 10)), blocks=13)
    votes = {"y": 7, "x": 6}
    assert subsample.vote_distance(votes, spec.normaliser, spec.test.cap) == 0
    honest = _asamp_runs(spec, votes, spec.test.scale)
    assert sum(v == "y" for v, _ in honest) > ASAMP_RUNS / 10
    never = lambda value: False  # noqa: E731  (d = 0: every release's claim is false)
    for level in (0.05, 0.1, 0.2):
        assert cp_upper(wrong_and_sure(honest, never, level), ASAMP_RUNS) <= level, level
    control = _asamp_runs(spec, votes, spec.test.scale / 2)
    assert cp_lower(wrong_and_sure(control, never, 0.1), ASAMP_RUNS) > 0.1


# --- privacy audits of the stable-histogram mode -------------------------------------------------------

AUDIT_RUNS = 20000
AUDIT_DELTA = Fraction(1, 20)


def _histogram_outputs(spec: histogram_mode.HistogramModeSpec, counts: dict[str, int], seed: int) -> list[Any]:
    rng = SeededRandomSource(seed)
    return [histogram_mode.release(spec, counts, rng) for _ in range(AUDIT_RUNS)]


EVENTS = {"refused": lambda v: v is REFUSED, "x": lambda v: v == "x",
          "new": lambda v: v not in (REFUSED, "x")}


def _new_values_pair(spec: histogram_mode.HistogramModeSpec) -> list[tuple]:
    # D: nothing; D' adds one person's k = 3 rows of three new values (the vertex where T is tight
    # at this setting): "new" may have probability <= delta on D', and 0 on D.
    x: dict[str, int] = {}
    y = {"y1": 1, "y2": 1, "y3": 1}
    return violations(_histogram_outputs(spec, x, 1), _histogram_outputs(spec, y, 2), EVENTS, float(spec.epsilon),
                      float(spec.delta))


def test_histogram_mode_new_values_are_protected_by_delta() -> None:
    spec = histogram_mode.HistogramModeSpec(Fraction(1), AUDIT_DELTA, 3)
    # The exact chance that one of three one-row values passes is close to delta: the pair is tight.
    tail = discrete_laplace_upper_tail(spec.scale, spec.threshold - 1)
    assert 0.5 * float(AUDIT_DELTA) < 1 - (1 - tail) ** 3 <= float(AUDIT_DELTA)
    assert _new_values_pair(spec) == []


def test_histogram_mode_negative_control_one_row_threshold_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    # T of a single one-row value (partition selection with one key per person): three new values
    # then pass with probability about 3 x delta.
    monkeypatch.setattr(histogram_mode.HistogramModeSpec, "threshold",
                        property(lambda spec: 1 + histogram_mode.discrete_laplace_threshold(spec.scale, 1, spec.delta)))
    spec = histogram_mode.HistogramModeSpec(Fraction(1), AUDIT_DELTA, 3)
    assert ("new", "D'>D") in {(f[0], f[1]) for f in _new_values_pair(spec)}


def _tie_pair(spec: histogram_mode.HistogramModeSpec) -> list[tuple]:
    # Both values far above T; D' adds one person's 3 rows to "x" (counts move by 3 in L1).
    top = spec.threshold + 200
    x, y = {"x": top, "z": top}, {"x": top + 3, "z": top}
    return violations(_histogram_outputs(spec, x, 3), _histogram_outputs(spec, y, 4), EVENTS, float(spec.epsilon),
                      float(spec.delta))


def test_histogram_mode_is_epsilon_dp_on_an_existing_value_pair() -> None:
    assert _tie_pair(histogram_mode.HistogramModeSpec(Fraction(3), AUDIT_DELTA, 3)) == []


def test_histogram_mode_negative_control_ignoring_max_rows_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    # Scale 1 / (eps/2) = 2/3 instead of k / (eps/2) = 2: with the 3-row shift P(z) falls from ~0.4 to
    # under 0.01, far below (P_D(z) - delta) / e^3.
    monkeypatch.setattr(histogram_mode.HistogramModeSpec, "scale",
                        property(lambda spec: Fraction(1) / (spec.epsilon * histogram_mode.SELECTION_SHARE)))
    assert _tie_pair(histogram_mode.HistogramModeSpec(Fraction(3), AUDIT_DELTA, 3)) != []
