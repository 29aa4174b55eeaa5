"""PrivacyCost: an exact (epsilon, delta) pair, and the PrivacyLoss terms it was made of.

Budgets are added and compared as fractions.Fraction, so a long session never drifts through
float rounding. Floats from users are converted through their shortest decimal repr
(0.1 -> 1/10), which is what the user wrote.

A cost computed by a mechanism also keeps *how* it loses privacy (`losses`): the noise family
and its parameters (discrete Laplace scale and sensitivity, discrete Gaussian sigma and
sensitivity), an (epsilon, delta) pair where that is all that is known (PTR, partition
selection, A_samp, sparse vector), or a zCDP rho. The (epsilon, delta) arithmetic never reads
them; they are recorded in the ledger so that a tighter accountant (PLD, zCDP) can compose them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Rational
from typing import Literal

LossFamily = Literal["discrete_laplace", "discrete_gaussian", "approx_dp", "zcdp", "bounded_range"]
LOSS_FAMILIES: tuple[LossFamily, ...] = ("discrete_laplace", "discrete_gaussian", "approx_dp", "zcdp", "bounded_range")


def to_fraction(value: object) -> Fraction:
    """An exact Fraction from an int, a Fraction, a Decimal, a float (via its repr) or a string."""
    if isinstance(value, bool):
        raise TypeError("a privacy parameter must be a number, not a bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, Rational)):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value))
    if isinstance(value, str):
        return Fraction(value.strip())
    return Fraction(str(value))


@dataclass(frozen=True, slots=True)
class PrivacyLoss:
    """How one release loses privacy, precisely enough for a tight accountant.

    `epsilon` and `delta` are the pair the (epsilon, delta) accountant adds up (for noise
    families: what that noise costs under pure or approximate DP). The family says what else is
    known: `discrete_laplace` (scale and L1 sensitivity, same units), `discrete_gaussian`
    (sigma^2 and L2 sensitivity), `approx_dp` (nothing more: the pair is the whole statement),
    `zcdp` (rho, with its (epsilon, delta) conversion), `bounded_range` (pure epsilon-DP whose
    privacy loss moves within an interval of width epsilon, as the exponential mechanism's does:
    then also epsilon^2 / 8-zCDP; Durfee and Rogers 2019, Cesar and Rogers 2021).
    """

    family: LossFamily
    mechanism: str
    epsilon: Fraction
    delta: Fraction = Fraction(0)
    sensitivity: Fraction | None = None
    scale: Fraction | None = None
    sigma2: Fraction | None = None  # the discrete Gaussian's sigma squared (exact; sigma may be irrational)
    rho: Fraction | None = None
    # A zcdp term that is exactly the adaptive composition of these terms (e.g. the Median
    # Mechanism layer's Gaussians and pure sparse-vector rounds): the PLD accountant composes
    # them instead of the (epsilon, delta) conversion; the other accountants read the term itself.
    parts: tuple[PrivacyLoss, ...] = ()

    def record(self) -> dict[str, object]:
        """The ledger's JSON form: exact fractions as strings, absent parameters left out."""
        out: dict[str, object] = {"family": self.family, "mechanism": self.mechanism}
        for name in ("epsilon", "delta", "sensitivity", "scale", "sigma2", "rho"):
            value = getattr(self, name)
            if value is not None:
                out[name] = str(value)
        if self.parts:
            out["parts"] = [part.record() for part in self.parts]
        return out


@dataclass(frozen=True, slots=True, order=False)
class PrivacyCost:
    """An (epsilon, delta) cost or budget, exact; a mechanism's cost also lists its losses."""

    epsilon: Fraction
    delta: Fraction = Fraction(0)
    losses: tuple[PrivacyLoss, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", to_fraction(self.epsilon))
        object.__setattr__(self, "delta", to_fraction(self.delta))
        if self.epsilon < 0 or self.delta < 0 or self.delta >= 1:
            raise ValueError("a privacy cost needs epsilon >= 0 and 0 <= delta < 1")

    @classmethod
    def zero(cls) -> PrivacyCost:
        """The cost of answering nothing."""
        return cls(Fraction(0), Fraction(0))

    @classmethod
    def of(cls, loss: PrivacyLoss) -> PrivacyCost:
        """The cost of one release: its loss's (epsilon, delta), with the loss kept."""
        return cls(loss.epsilon, loss.delta, (loss,))

    def __add__(self, other: PrivacyCost) -> PrivacyCost:
        return PrivacyCost(self.epsilon + other.epsilon, self.delta + other.delta, self.losses + other.losses)

    def __sub__(self, other: PrivacyCost) -> PrivacyCost:
        return PrivacyCost(max(Fraction(0), self.epsilon - other.epsilon), max(Fraction(0), self.delta - other.delta))

    def fits_in(self, budget: PrivacyCost) -> bool:
        """True when both parts are at most the budget's."""
        return self.epsilon <= budget.epsilon and self.delta <= budget.delta

    def scale(self, factor: Fraction | int) -> PrivacyCost:
        """This cost times a non-negative factor (a share of a split)."""
        return PrivacyCost(self.epsilon * factor, self.delta * factor)

    def __str__(self) -> str:
        return f"(epsilon={float(self.epsilon):.6g}, delta={float(self.delta):.3g})"
