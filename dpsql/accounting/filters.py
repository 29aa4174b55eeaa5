"""Privacy filters: which charges an analyst who adapts to every answer may still make.

An analyst picks each query's epsilon, noise and aggregate *after* seeing earlier answers. A
budget check is then a *privacy filter* (Rogers, Roth, Ullman and Vadhan, "Privacy Odometers
and Filters", 2016): a stopping rule whose whole interaction is (E, D)-DP for the budget (E, D)
whatever the analyst does. Composing the exact privacy profiles of the history and stopping when
the curve is crossed (the "natural filter") is *not* valid in general under that adaptivity
(Regehr et al., "Privacy Filters are Captured by Residues", 2026); it is only for families of
mechanisms whose compositions are totally ordered. dpsql decides with filters proven valid:

- ``basic``: sum of epsilons <= E and sum of deltas <= D (Rogers et al. 2016).
- ``zcdp``: every term is (approximately) rho-zCDP (pure epsilon-DP: epsilon^2 / 2; a discrete
  Gaussian: s^2 / (2 sigma^2); an (epsilon, delta) term: delta-approximately epsilon^2 / 2; a
  bounded-range term such as the exponential mechanism: epsilon^2 / 8); the filter admits while
  the rhos' sum converts to (E, D - sum of deltas) (the approximate zCDP filter of Whitehouse,
  Ramdas, Rogers and Wu, "Fully-Adaptive Composition in Differential Privacy", 2023, which
  contains the Renyi filter of Feldman and Zrnic 2021), with the tight conversion of
  ``dpsql.accounting.zcdp``.
- ``homogeneous``: the first charge fixes a unit (epsilon0, delta0); while every charge is
  (epsilon0, delta0)-DP, k charges are admitted up to the largest k whose optimal k-fold
  composition (``dpsql.accounting.optimal``, exact) is within (E, D). The cap is fixed before any
  answer is seen (the first charge is chosen before any data is read), so the interaction is a
  composition of at most that many (epsilon0, delta0)-DP mechanisms: a stopping time on a
  totally ordered chain, where the natural filter is free.
- ``adaptive`` (the default): the union of the three, each with a fixed share of D:
  ``HOMOGENEOUS_SHARE``, ``ZCDP_SHARE``, ``BASIC_SHARE``. A charge is admitted when any class
  admits the whole history with it. Theorem (docs/privacy-model.md): if each class condition is
  a valid (E, D_i) filter and is monotone (once false for a history, false for every extension),
  the union is an (E, sum D_i) filter. Proof sketch: the final transcript falls in the first
  class whose condition its history meets; on those transcripts the union made exactly the
  decisions that class's own filter makes for an analyst who stops when it would refuse, so the
  hockey-stick divergence over them is at most D_i; the classes partition the outputs, so the
  divergences add up.

Every decision is a handful of exact Fraction sums and one float conversion (microseconds); the
homogeneous cap is computed once per unit and budget (a millisecond), never the whole history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Literal

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.optimal import chain_epsilon, chain_length
from dpsql.accounting.terms import zcdp_rho_of
from dpsql.accounting.zcdp import delta_of, epsilon_of, float_down, float_up

FilterName = Literal["adaptive", "zcdp", "basic"]
FILTERS: tuple[FilterName, ...] = ("adaptive", "zcdp", "basic")
DEFAULT_FILTER: FilterName = "adaptive"
# Policy names kept for old policy files: "pld" (the natural filter over privacy-loss
# distributions, which is not valid against an adaptive analyst) now means the valid default.
ALIASES: dict[str, FilterName] = {"pld": "adaptive"}

# The adaptive filter's shares of the budget's delta (fixed: the theorem needs them fixed in advance).
# Measured by bench/filters.py: within 2-4% of the best split on every workload there; the basic
# class keeps a fifth so that a few large charges with delta (partition selection) still fit.
HOMOGENEOUS_SHARE = Fraction(2, 5)
ZCDP_SHARE = Fraction(2, 5)
BASIC_SHARE = Fraction(1, 5)

# How far a count of "more such charges" is searched (shown as "at least" beyond).
MORE_LIMIT = 1000


def filter_name(name: str) -> FilterName:
    """The filter a policy names (an alias resolved); ValueError for an unknown name."""
    resolved = ALIASES.get(name, name)
    if resolved not in FILTERS:
        raise ValueError(f"unknown accountant {name!r}: use one of {', '.join(FILTERS)}")
    return resolved


term_rho = zcdp_rho_of  # one definition: the rho a term is charged under the zCDP filter


def term_zcdp_delta(loss: PrivacyLoss) -> Fraction:
    """The delta a term adds outright under approximate zCDP (a Gaussian's or a zCDP term's
    recorded delta is only its conversion, not an extra failure probability)."""
    return loss.delta if loss.family in ("approx_dp", "discrete_laplace", "bounded_range") else Fraction(0)


@dataclass(frozen=True, slots=True, eq=False)
class Charge:
    """One charge's terms, summarised once: what every class reads of it."""

    terms: tuple[PrivacyLoss, ...]
    epsilon: Fraction  # basic composition of its terms: the charge is (epsilon, delta)-DP
    delta: Fraction
    rho: Fraction
    zdelta: Fraction


# A charge's rho is rounded up to a multiple of 2^-64: a Gaussian's exact rho has a denominator
# of its own, and a sum over thousands of distinct ones would grow without bound (slower each
# time); on one grid the sum stays small. Rounding up can only refuse earlier (by 2^-64 a charge).
_RHO_GRID = 2**64


def _rho_up(rho: Fraction) -> Fraction:
    return Fraction(-((-rho.numerator * _RHO_GRID) // rho.denominator), _RHO_GRID)


@lru_cache(maxsize=1024)
def charge_of(terms: tuple[PrivacyLoss, ...]) -> Charge:
    """The summary of one charge's terms (memoised: a repeated query charges the same terms)."""
    return Charge(terms, sum((t.epsilon for t in terms), Fraction(0)), sum((t.delta for t in terms), Fraction(0)),
                  _rho_up(sum((term_rho(t) for t in terms), Fraction(0))),
                  sum((term_zcdp_delta(t) for t in terms), Fraction(0)))


def _plus(total: Fraction, part: Fraction, times: int) -> Fraction:
    if not part or not times:
        return total
    return total + (part if times == 1 else part * times)


@dataclass(frozen=True, slots=True)
class History:
    """What the filters read of an analyst's charges: exact sums, and the homogeneous chain.

    ``unit`` is the first charge's (epsilon, delta); ``chain`` says every charge so far is within
    it (then each is (unit)-DP and the homogeneous class applies). Immutable: ``add`` returns a
    new history, so a cached one is never changed by a check that does not charge.
    """

    count: int = 0
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho: Fraction = Fraction(0)
    zdelta: Fraction = Fraction(0)
    unit: tuple[Fraction, Fraction] | None = None
    chain: bool = True
    largest: Fraction = Fraction(0)  # the largest epsilon of one charge

    def add(self, charge: Charge, times: int = 1) -> History:
        """This history followed by ``times`` charges like ``charge``."""
        if times < 0:
            raise ValueError("times must be >= 0")
        if times == 0:
            return self
        unit = self.unit if self.unit is not None else (charge.epsilon, charge.delta)
        chain = self.chain and charge.epsilon <= unit[0] and charge.delta <= unit[1]
        return History(self.count + times, _plus(self.epsilon, charge.epsilon, times), _plus(self.delta, charge.delta, times),
                       _plus(self.rho, charge.rho, times), _plus(self.zdelta, charge.zdelta, times), unit, chain,
                       max(self.largest, charge.epsilon))


class _Class:
    """One valid filter: ``admits`` a history (monotone), and what it says of it for display."""

    name: str

    def admits(self, history: History) -> bool:
        raise NotImplementedError

    def epsilon(self, history: History) -> Fraction | float | None:
        """The smallest epsilon at which this class's condition holds for ``history`` at its delta
        (None: at none; a Fraction where it is exact); display only."""
        raise NotImplementedError

    def more(self, history: History, charge: Charge, limit: int) -> int:
        """How many more charges like ``charge`` this class admits after ``history`` (<= limit)."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class BasicClass(_Class):
    budget_epsilon: Fraction
    budget_delta: Fraction
    name: str = "basic"

    def admits(self, history: History) -> bool:
        return history.epsilon <= self.budget_epsilon and history.delta <= self.budget_delta

    def epsilon(self, history: History) -> Fraction | float | None:
        return history.epsilon if history.delta <= self.budget_delta else None

    def more(self, history: History, charge: Charge, limit: int) -> int:
        if not self.admits(history):
            return 0
        counts = [limit]
        if charge.epsilon:
            counts.append(int((self.budget_epsilon - history.epsilon) // charge.epsilon))
        if charge.delta:
            counts.append(int((self.budget_delta - history.delta) // charge.delta))
        return max(0, min(counts))


@dataclass(frozen=True, slots=True)
class ZcdpClass(_Class):
    budget_epsilon: Fraction
    budget_delta: Fraction
    name: str = "zcdp"

    def _fits(self, rho: Fraction, zdelta: Fraction) -> bool:
        if zdelta > self.budget_delta:
            return False
        # delta_of is rounded up, the deltas' sum up, the budget down: rounding can only refuse.
        return (delta_of(rho, self.budget_epsilon) + float_up(zdelta)) * (1 + 1e-12) <= float_down(self.budget_delta)

    def admits(self, history: History) -> bool:
        return self._fits(history.rho, history.zdelta)

    def epsilon(self, history: History) -> Fraction | float | None:
        left = self.budget_delta - history.zdelta
        if left <= 0:
            return None
        return epsilon_of(history.rho, left)

    def more(self, history: History, charge: Charge, limit: int) -> int:
        def fits(j: int) -> bool:
            return self._fits(_plus(history.rho, charge.rho, j), _plus(history.zdelta, charge.zdelta, j))

        return _largest(fits, limit)


@dataclass(frozen=True, slots=True)
class HomogeneousClass(_Class):
    budget_epsilon: Fraction
    budget_delta: Fraction
    name: str = "homogeneous"

    def cap(self, unit: tuple[Fraction, Fraction]) -> int:
        """How many (unit)-DP charges the chain admits: fixed by the unit and the budget alone."""
        if unit[0] == 0 and unit[1] == 0:
            return 10**9  # charges that cost nothing never end the chain
        return chain_length(unit[0], unit[1], self.budget_epsilon, self.budget_delta)

    def admits(self, history: History) -> bool:
        if history.count == 0:
            return True
        assert history.unit is not None
        return history.chain and history.count <= self.cap(history.unit)

    def epsilon(self, history: History) -> Fraction | float | None:
        if history.count == 0:
            return Fraction(0)
        if not history.chain:
            return None
        assert history.unit is not None
        chained = chain_epsilon(history.count, history.unit[0], history.unit[1], self.budget_delta)
        # Never below the unit's own epsilon (true: each charge is (unit)-DP): one query of epsilon
        # 0.1 reads as 0.1 spent, not the 0.09999 its delta share would allow.
        if chained is None:
            return None
        return history.unit[0] if chained <= history.unit[0] else chained

    def more(self, history: History, charge: Charge, limit: int) -> int:
        unit = history.unit if history.unit is not None else (charge.epsilon, charge.delta)
        if not history.chain or charge.epsilon > unit[0] or charge.delta > unit[1]:
            return 0
        return max(0, min(limit, self.cap(unit) - history.count))


def _largest(fits: Callable[[int], bool], limit: int) -> int:
    """The largest j in [0, limit] with fits(j) (fits is monotone: true up to some j)."""
    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    if hi > limit:
        if fits(limit):
            return limit
        hi = limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@dataclass(frozen=True, slots=True)
class Filter:
    """A named filter for one budget: the classes it unites, and what it says of a history."""

    name: FilterName
    budget: PrivacyCost

    @property
    def classes(self) -> tuple[_Class, ...]:
        return _classes(self.name, self.budget.epsilon, self.budget.delta)

    def admits(self, history: History) -> bool:
        """Whether the history (the new charge included) is within the budget under the filter.
        No single charge may have a larger epsilon than the whole budget (a monotone condition
        intersected with a valid filter: still valid), whatever a class would allow at its delta."""
        return history.largest <= self.budget.epsilon and any(c.admits(history) for c in self.classes)

    def admitting(self, history: History) -> str | None:
        """The first class that admits ``history`` (None: none): EXPLAIN and tests."""
        return next((c.name for c in self.classes if c.admits(history)), None)

    def spent(self, history: History) -> PrivacyCost:
        """What the history has spent, as shown: the smallest epsilon at which some class still
        holds it (within the budget's epsilon exactly when the filter admits it: float rounding
        at the boundary is settled by ``admits``), and the deltas the charges consume outright.
        Display only: the check is ``admits``."""
        values = [e if e > 0 else Fraction(0) for e in (c.epsilon(history) for c in self.classes) if e is not None]
        limit = self.budget.epsilon
        epsilon = Fraction(min(values)) if values else max(history.epsilon, limit)
        if self.admits(history):
            epsilon = min(epsilon, limit)
        elif epsilon <= limit:
            epsilon = limit + Fraction(1, 10**12)  # over the budget, by the least that reads so
        return PrivacyCost(epsilon, min(history.delta, self.budget.delta))

    def more(self, history: History, charge: Charge, limit: int = MORE_LIMIT) -> int:
        """How many more charges like ``charge`` fit after ``history`` (counted up to ``limit``)."""
        if max(history.largest, charge.epsilon) > self.budget.epsilon:
            return 0
        if charge.epsilon == 0 and charge.delta == 0:
            return limit if self.admits(history) else 0
        return max(c.more(history, charge, limit) for c in self.classes)


@lru_cache(maxsize=64)
def _classes(name: FilterName, epsilon: Fraction, delta: Fraction) -> tuple[_Class, ...]:
    if name == "basic":
        return (BasicClass(epsilon, delta),)
    if name == "zcdp":
        return (ZcdpClass(epsilon, delta),)
    # Cheap classes first: most charges are decided by the basic sums.
    return (BasicClass(epsilon, delta * BASIC_SHARE), ZcdpClass(epsilon, delta * ZCDP_SHARE),
            HomogeneousClass(epsilon, delta * HOMOGENEOUS_SHARE))


def history_of(charges: Sequence[tuple[Sequence[PrivacyLoss], int]]) -> History:
    """The history of ``(terms, times)`` groups, in order."""
    history = History()
    for terms, times in charges:
        history = history.add(charge_of(tuple(terms)), times)
    return history
