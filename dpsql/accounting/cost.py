"""PrivacyCost: an exact (epsilon, delta) pair.

Budgets are added and compared as fractions.Fraction, so a long session never drifts through
float rounding. Floats from users are converted through their shortest decimal repr
(0.1 -> 1/10), which is what the user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational


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


@dataclass(frozen=True, slots=True, order=False)
class PrivacyCost:
    """An (epsilon, delta) cost or budget, exact."""

    epsilon: Fraction
    delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", to_fraction(self.epsilon))
        object.__setattr__(self, "delta", to_fraction(self.delta))
        if self.epsilon < 0 or self.delta < 0 or self.delta >= 1:
            raise ValueError("a privacy cost needs epsilon >= 0 and 0 <= delta < 1")

    @classmethod
    def zero(cls) -> PrivacyCost:
        """The cost of answering nothing."""
        return cls(Fraction(0), Fraction(0))

    def __add__(self, other: PrivacyCost) -> PrivacyCost:
        return PrivacyCost(self.epsilon + other.epsilon, self.delta + other.delta)

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
