"""Laplace partition selection: release a group key only if its noisy person count is high enough.

Privacy function: each person touches at most `max_groups` keys (after bounding), so the vector
of distinct-person counts per key has L1 sensitivity `max_groups`; discrete Laplace of scale
`max_groups / epsilon` makes the counts epsilon-DP. A key present only because of one person has
count 1, and it is released only if 1 + X >= threshold; with at most `max_groups` such keys the
chance that any is released is at most max_groups * P(X >= threshold - 1) <= delta. So selection
is (epsilon, delta)-DP. The threshold uses the exact discrete Laplace tail (a per-key form
slightly tighter than the textbook continuous bound, and never looser).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_laplace, discrete_laplace_threshold


@dataclass(frozen=True, slots=True)
class PartitionSelectionSpec:
    """Selection of private group keys: the per-person key limit, epsilon and delta."""

    max_groups: int
    epsilon: Fraction
    delta: Fraction

    def __post_init__(self) -> None:
        if self.max_groups < 1 or self.epsilon <= 0 or not 0 < self.delta < 1:
            raise ValueError("partition selection needs max_groups >= 1, epsilon > 0 and 0 < delta < 1")

    @property
    def scale(self) -> Fraction:
        """The noise scale on person counts."""
        return Fraction(self.max_groups) / self.epsilon

    @property
    def threshold(self) -> int:
        """The smallest noisy person count that releases a key."""
        return 1 + discrete_laplace_threshold(self.scale, self.max_groups, self.delta)


def cost(spec: PartitionSelectionSpec) -> PrivacyCost:
    """What selecting keys costs: (epsilon, delta), whatever the data."""
    return PrivacyCost.of(PrivacyLoss("approx_dp", "partition_selection", spec.epsilon, spec.delta))


def keep(spec: PartitionSelectionSpec, persons: int, rng: RandomSource) -> bool:
    """Whether a key with `persons` distinct persons (after bounding) is released."""
    return int(persons) + discrete_laplace(spec.scale, rng) >= spec.threshold


class PartitionSelection:
    """Private GROUP BY keys (docs/mechanisms.md): `release(spec, persons, rng)` says whether a key is kept."""

    name = "partition_selection"
    spec_type = PartitionSelectionSpec
    output = Output()

    def cost(self, spec: PartitionSelectionSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: PartitionSelectionSpec) -> Parameters:
        return ()

    def release(self, spec: PartitionSelectionSpec, raw: int, rng: RandomSource) -> bool:
        return keep(spec, raw, rng)

    def describe(self, spec: PartitionSelectionSpec, context: Describing = Describing()) -> str:
        return (f"person count per key + discrete Laplace (scale {fmt(spec.scale)}), "
                f"released when >= {spec.threshold}; epsilon {fmt(spec.epsilon)}, delta {float(spec.delta):.3g}")

    def error(self, spec: PartitionSelectionSpec) -> ErrorDescription:
        return ErrorDescription(scale=float(spec.scale), details=(("threshold", spec.threshold),))

    def refusal(self, spec: object) -> str | None:
        return None
