"""MODE by A_samp (Dwork-Roth Alg. 14), capped by construction (docs/mechanisms.md).

The engine assigns each person, by a keyed hash of the person id, to at most T of B subsamples
(default: a disjoint partition, T = 1); a person's rows all go where the person goes, so the
cap holds whatever the number of rows. Each non-empty subsample votes for its mode (ties broken
by a keyed random hash, so tiny subsamples do not all vote for the smallest label); empty
subsamples abstain. Adding or removing one person changes at most T votes, so the gap
c_(1) - c_(2) between the two largest vote counts moves by at most 2T, and

    d = max(0, floor((gap - 1) / (2T)))

satisfies (L) |d(x) - d(y)| <= 1 and (S) d >= 1 implies gap >= 2T + 1, so every neighbour has
the same winner. The generic PTR test of `ptr` then releases the winner or ⊥: (eps, delta).
The normaliser must be 2T for the T actually enforced; normalising by T leaks (the negative
control in tests/unit/mechanisms catches it). B, T and the hash seeds never depend on the data.

Confidence (mechanisms/confidence.stability_alpha). A release carries the noisy distance's
p-value: the claim "the released value wins the subsample vote and no single person added or
removed changes the winner" (d >= 1) holds with confidence 1 - P(DLap(G/eps) >= d^). It is a
statement about the vote of this data set's subsamples, not that the value has the largest
count in the whole column (A_samp's votes say nothing sharper without assumptions on the data).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.confidence import Confident, stability_alpha
from dpsql.mechanisms.ptr import REFUSED, PTRTest, _Refused, describe_test, test_details, test_parameters
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_laplace

DEFAULT_BLOCKS = 200


def default_blocks(test: PTRTest) -> int:
    """B from public facts only: max(200, 8 (tau + 4 G/eps)).

    The distance can never exceed (B - 1) / 2T, and a release is reliable once d >= tau + 4/eps,
    so B must leave room for it: this B passes when the top value leads the runner-up by a
    quarter of the subsamples. 200 is the default without an estimate of n (docs/mechanisms.md).
    """
    return max(DEFAULT_BLOCKS, 8 * (test.threshold + math.ceil(4 * test.scale)))


@dataclass(frozen=True, slots=True)
class ASampSpec:
    """A_samp with each person in at most `copies` (T) of `blocks` (B) subsamples."""

    test: PTRTest
    blocks: int = DEFAULT_BLOCKS
    copies: int = 1

    def __post_init__(self) -> None:
        if self.blocks < 1 or self.copies < 1:
            raise ValueError("A_samp needs at least one block and T >= 1")

    @property
    def normaliser(self) -> int:
        """2T: how far one person can move the vote gap (add/remove adjacency)."""
        return 2 * self.copies


def vote_gap(votes: Mapping[Hashable, int]) -> int:
    """c_(1) - c_(2): the winner's lead over the runner-up (0 without votes)."""
    counts = sorted((int(c) for c in votes.values() if c > 0), reverse=True)
    if not counts:
        return 0
    return counts[0] - (counts[1] if len(counts) > 1 else 0)


def vote_distance(votes: Mapping[Hashable, int], normaliser: int, cap: int) -> int:
    """max(0, floor((gap - 1) / 2T)), capped."""
    return min(max(0, (vote_gap(votes) - 1) // normaliser), cap)


def winner(votes: Mapping[Hashable, int]) -> Hashable | None:
    """The value with the most votes (ties: the smallest value, a data-independent rule)."""
    best = None
    for value, count in votes.items():
        if count <= 0:
            continue
        if best is None or count > votes[best] or (count == votes[best] and _order(value) < _order(best)):
            best = value
    return best


def _order(value: Hashable) -> tuple[str, object]:
    return (type(value).__name__, value)


def cost(spec: ASampSpec) -> PrivacyCost:
    """(eps, delta), whether the answer is a value or ⊥."""
    return PrivacyCost.of(PrivacyLoss("approx_dp", "asamp", spec.test.epsilon, spec.test.delta))


def release_confident(spec: ASampSpec, votes: Mapping[Hashable, int], rng: RandomSource) -> Confident | _Refused:
    """The subsample-mode winner if its noisy stability passes (ptr.passes: one draw), with the
    confidence that no single person changes the winner; else REFUSED (no votes: REFUSED)."""
    distance = vote_distance(votes, spec.normaliser, spec.test.cap)
    noisy = min(max(distance, 0), spec.test.cap) + discrete_laplace(spec.test.scale, rng)
    top = winner(votes)
    if noisy < spec.test.threshold or top is None:
        return REFUSED
    return Confident(top, 1.0 - stability_alpha(spec.test.scale, noisy))


def release(spec: ASampSpec, votes: Mapping[Hashable, int], rng: RandomSource) -> Hashable | _Refused:
    """The subsample-mode winner or REFUSED (the same draws as `release_confident`)."""
    out = release_confident(spec, votes, rng)
    return out if out is REFUSED else out.value  # type: ignore[union-attr]


def _lead(spec: ASampSpec) -> int:
    """The vote lead the test passes with probability >= 1/2: d = floor((gap - 1) / 2T) >= tau."""
    return spec.normaliser * spec.test.threshold + 1


class ASamp:
    """MODE (docs/mechanisms.md): reads {value: votes} (None: no votes); the winner or REFUSED."""

    name = "asamp"
    spec_type = ASampSpec
    output = Output(confidence=True)

    def cost(self, spec: ASampSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: ASampSpec) -> Parameters:
        return test_parameters(spec.test) + (("blocks", str(spec.blocks)),)

    def release(self, spec: ASampSpec, raw: Mapping[Hashable, int] | None, rng: RandomSource) -> Confident | _Refused:
        return release_confident(spec, raw or {}, rng)

    def describe(self, spec: ASampSpec, context: Describing = Describing()) -> str:
        return (f"A_samp: each {context.unit} in {spec.copies} of {spec.blocks} subsamples by a keyed hash (secret seed), "
                f"subsample modes (random tie-break, empty ones abstain), gap normalised by 2T={spec.normaliser}; "
                f"{describe_test(spec.test)}; answers (with probability >= 1/2) only when the top value wins at least "
                f"{_lead(spec)} more subsample votes than the runner-up ({100 * _lead(spec) / spec.blocks:.0f}% of the "
                f"subsamples), else ⊥; a release states its confidence that no single {context.unit} changes the vote's "
                f"winner (1 - P(DLap >= noisy distance)), a claim about the subsample vote; declare the column's values for report-noisy-max, which never refuses; "
                f"epsilon {fmt(spec.test.epsilon)}, delta {float(spec.test.delta):.3g}")

    def error(self, spec: ASampSpec) -> ErrorDescription:
        return ErrorDescription(details=(*test_details(spec.test), ("blocks", spec.blocks)))

    def refusal(self, spec: ASampSpec) -> str | None:
        return ("no value is consistently most frequent across subsamples (top values too close, or too few rows). "
                "Try a larger epsilon, more rows, or declare the column's values (MODE then never refuses).")
