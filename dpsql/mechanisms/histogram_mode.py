"""MODE of a column without declared values: the stable-histogram mode (docs/mechanisms.md).

The engine counts, per group, the rows of every value present (after bounding: one person keeps
at most k rows, each in one (group, value) cell). Two stages, each with half the epsilon and
discrete Laplace noise of scale b = k / (eps / 2) = 2k / eps:

1. Selection, as partition selection for undeclared GROUP BY keys (mechanisms/partition.py): each
   present value's count plus DLap(b); the values with a noisy count >= T form the set S.
2. Report-noisy-max over S: fresh DLap(b) on each count of S; the value with the largest one is
   released (ties: the first in a data-independent order). S empty: ⊥ (same cost, same message).

DP argument (add/remove one person, neighbours x and y = x + that person). Cells present in both
data sets: their count vector moves by at most k in L1, so stage 1's noisy counts on them are
(eps/2)-DP (the Laplace mechanism) and the part of S among them is post-processing. Cells present
only in y are the person's own: at most k cells with counts c_j >= 1 summing to <= k. Such a cell
passes with probability P(N >= T - c_j), and sum_j P(N >= T - c_j) is convex in (c_j), so over
{c_j >= 1, sum <= k} it is largest at a vertex: one cell of k rows, or k cells of one row. T is
the smallest integer with max(P(N >= T - k), k P(N >= T - 1)) <= delta, so S contains none of
them except with probability <= delta: stage 1 is (eps/2, delta)-DP (the stable-histogram argument,
as partition selection's, with row counts instead of person counts). Given S (public after
stage 1), the counts on S move by at most k in L1: stage 2 is (eps/2)-DP. Together (eps, delta),
whether the answer is a value or ⊥; the argmax and its confidence are post-processing.

Why two stages: the confidence (mechanisms/confidence.histogram_alpha) needs a union over the
candidates that is fixed before the compared noise is drawn; with one stage a value is in S
*because* its noise was large, and no bound independent of the number of distinct values holds.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.confidence import Confident, histogram_alpha
from dpsql.mechanisms.ptr import REFUSED, _Refused
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_laplace, discrete_laplace_ci, discrete_laplace_threshold

SELECTION_SHARE = Fraction(1, 2)


@functools.lru_cache(maxsize=256)
def row_threshold(scale: Fraction, max_rows: int, delta: Fraction) -> int:
    """T: the smallest integer with max(P(N >= T - k), k P(N >= T - 1)) <= delta, N ~ DLap(scale)."""
    one_cell = max_rows + discrete_laplace_threshold(scale, 1, delta)
    many_cells = 1 + discrete_laplace_threshold(scale, max_rows, delta)
    return max(one_cell, many_cells)


@dataclass(frozen=True, slots=True)
class HistogramModeSpec:
    """The stable-histogram mode: epsilon, delta and k = rows per person (all public)."""

    epsilon: Fraction
    delta: Fraction
    max_rows: int

    def __post_init__(self) -> None:
        if self.epsilon <= 0 or not 0 < self.delta < 1 or self.max_rows < 1:
            raise ValueError("the histogram mode needs epsilon > 0, 0 < delta < 1 and k >= 1")

    @property
    def scale(self) -> Fraction:
        """Discrete Laplace scale of both stages: k / (eps / 2)."""
        return Fraction(self.max_rows) / (Fraction(self.epsilon) * SELECTION_SHARE)

    @property
    def threshold(self) -> int:
        """T: the smallest noisy row count that keeps a value (stage 1)."""
        return row_threshold(self.scale, self.max_rows, Fraction(self.delta))

    def count_half_width(self, confidence: float = 0.95) -> int:
        """The 95% half-width of one noisy count."""
        return discrete_laplace_ci(self.scale, confidence)


def _order(value: Hashable) -> tuple[str, object]:
    return (type(value).__name__, value)


def release_confident(spec: HistogramModeSpec, counts: Mapping[Hashable, int], rng: RandomSource) -> Confident | _Refused:
    """The value with the largest fresh noisy count among those whose stage-1 noisy count reaches T,
    with its confidence; REFUSED when none does (or the group has no rows)."""
    present = sorted((v for v, c in counts.items() if int(c) > 0), key=_order)
    selected = [v for v in present if int(counts[v]) + discrete_laplace(spec.scale, rng) >= spec.threshold]
    if not selected:
        return REFUSED
    best, best_score, second = None, None, None
    for value in selected:
        score = int(counts[value]) + discrete_laplace(spec.scale, rng)
        if best_score is None or score > best_score:
            best, best_score, second = value, score, best_score
        elif second is None or score > second:
            second = score
    assert best_score is not None
    floor = spec.threshold - 1  # every value outside S had a stage-1 noisy count below T
    runner_up = floor if second is None else max(second, floor)
    return Confident(best, 1.0 - histogram_alpha(spec.scale, len(selected), max(best_score - runner_up, 0)))


def release(spec: HistogramModeSpec, counts: Mapping[Hashable, int], rng: RandomSource) -> Hashable | _Refused:
    """The released value or REFUSED (the same draws as `release_confident`)."""
    out = release_confident(spec, counts, rng)
    return out if out is REFUSED else out.value  # type: ignore[union-attr]


def cost(spec: HistogramModeSpec) -> PrivacyCost:
    """(eps, delta), whether the answer is a value or ⊥."""
    return PrivacyCost.of(PrivacyLoss("approx_dp", "stable-histogram", spec.epsilon, spec.delta))


class HistogramMode:
    """MODE of a column without declared values (docs/mechanisms.md): reads {value: rows}; a value or REFUSED."""

    name = "stable-histogram"
    spec_type = HistogramModeSpec
    output = Output(confidence=True)

    def cost(self, spec: HistogramModeSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: HistogramModeSpec) -> Parameters:
        return ()

    def release(self, spec: HistogramModeSpec, raw: Mapping[Hashable, int] | None, rng: RandomSource) -> Confident | _Refused:
        return release_confident(spec, raw or {}, rng)

    def describe(self, spec: HistogramModeSpec, context: Describing = Describing()) -> str:
        return (f"stable-histogram mode: each value's row count + discrete Laplace (scale {fmt(spec.scale)}, sensitivity "
                f"{spec.max_rows}), values kept when >= {spec.threshold} rows (a value one {context.unit} could hold passes "
                f"with probability <= delta), then report-noisy-max over the kept values with fresh noise of the same scale; "
                f"⊥ when no value reaches the threshold; each release states its confidence that it has the largest count "
                f"(1 - min(1, 2 |kept| P(DLap >= gap/2))); epsilon {fmt(spec.epsilon * SELECTION_SHARE)} + "
                f"{fmt(spec.epsilon * (1 - SELECTION_SHARE))}, delta {float(spec.delta):.3g}")

    def error(self, spec: HistogramModeSpec) -> ErrorDescription:
        return ErrorDescription(scale=float(spec.scale), details=(("threshold", spec.threshold),))

    def refusal(self, spec: HistogramModeSpec) -> str | None:
        return (f"no value is frequent enough to pass the noisy threshold of {spec.threshold} rows. "
                "Try a larger epsilon, or declare the column's values (MODE then never refuses).")
