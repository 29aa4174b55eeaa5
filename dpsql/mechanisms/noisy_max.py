"""MODE over a column with declared values: report-noisy-max on the per-value counts (never ⊥).

DP argument. The engine counts, per group, the rows of each declared value (values outside the
declared list are dropped: a per-row map, so neighbours stay neighbours). One person keeps at most
k rows and each row adds 1 to exactly one (group, value) cell, so adding or removing a person
moves the whole count vector (all groups, all values) by at most k in L1. Adding discrete Laplace
noise of scale k / eps to every cell, the declared values with zero count included, is therefore
(eps, 0)-DP (the Laplace mechanism; docs/privacy-model.md), and reporting each group's value with the largest
noisy count (ties to the first declared value) is post-processing. The noise is drawn for every
declared value of every released group whatever the data, so the release never refuses and its
cost and shape read the same for every table.

Confidence (mechanisms/confidence.noisy_max_alpha): from the gap g between the top two noisy
counts, "the released value has the largest true count" holds with confidence
1 - min(1, K P(N >= ceil(g/2))), K the number of declared values: post-processing of the noisy vector.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.confidence import Confident, noisy_max_alpha
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_laplace, discrete_laplace_ci


@dataclass(frozen=True, slots=True)
class NoisyMaxModeSpec:
    """Report-noisy-max over the declared `values`; k = rows per person."""

    epsilon: Fraction
    max_rows: int
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        if self.epsilon <= 0 or self.max_rows < 1 or not self.values:
            raise ValueError("report-noisy-max needs epsilon > 0, k >= 1 and at least one declared value")

    @property
    def scale(self) -> Fraction:
        """Discrete Laplace scale per count: k / eps."""
        return Fraction(self.max_rows) / Fraction(self.epsilon)

    def count_half_width(self, confidence: float = 0.95) -> float:
        """The 95% half-width of each noisy count: the released value is the mode whenever the top
        count leads every other by more than twice this (both counts within it)."""
        return float(discrete_laplace_ci(self.scale, confidence))


def release_confident(spec: NoisyMaxModeSpec, counts: Mapping[Hashable, int], rng: RandomSource) -> Confident:
    """The declared value with the largest noisy count (one draw per declared value, always), with
    the confidence that it has the largest true count (from the gap to the runner-up's noisy count)."""
    best, best_score, second = None, None, None
    for value in spec.values:
        score = int(counts.get(value, 0)) + discrete_laplace(spec.scale, rng)
        if best_score is None or score > best_score:
            best, best_score, second = value, score, best_score
        elif second is None or score > second:
            second = score
    assert best_score is not None
    if second is None:  # one declared value: it is the mode
        return Confident(best, 1.0)
    return Confident(best, 1.0 - noisy_max_alpha(spec.scale, len(spec.values), best_score - second))


def release(spec: NoisyMaxModeSpec, counts: Mapping[Hashable, int], rng: RandomSource) -> Any:
    """The declared value with the largest noisy count (the same draws as `release_confident`)."""
    return release_confident(spec, counts, rng).value


class NoisyMaxMode:
    """MODE of a column with declared values (docs/mechanisms.md): reads per-value counts, never refuses."""

    name = "noisy-max"
    spec_type = NoisyMaxModeSpec
    output = Output(confidence=True)

    def cost(self, spec: NoisyMaxModeSpec) -> PrivacyCost:
        return PrivacyCost.of(PrivacyLoss("approx_dp", "noisy-max", spec.epsilon, Fraction(0)))

    def parameters(self, spec: NoisyMaxModeSpec) -> Parameters:
        return ()

    def release(self, spec: NoisyMaxModeSpec, raw: Mapping[Hashable, int], rng: RandomSource) -> Confident:
        return release_confident(spec, raw, rng)

    def describe(self, spec: NoisyMaxModeSpec, context: Describing = Describing()) -> str:
        return (f"report-noisy-max over the {len(spec.values)} declared values' counts (never ⊥): discrete Laplace "
                f"scale {fmt(spec.scale)} per count (sensitivity {spec.max_rows}), the mode whenever it leads by more than "
                f"{fmt(2 * spec.count_half_width())} rows (95%); each release states its confidence "
                f"1 - min(1, {len(spec.values)} P(DLap >= gap/2)) from the gap between the top two noisy counts; epsilon {fmt(spec.epsilon)}, delta 0")

    def error(self, spec: NoisyMaxModeSpec) -> ErrorDescription:
        return ErrorDescription(scale=float(spec.scale))

    def refusal(self, spec: object) -> str | None:
        return None
