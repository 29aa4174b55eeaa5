"""Compositions of a history of PrivacyLoss terms: reference accountants, not the budget check.

The ledger admits charges with a privacy filter (``dpsql.accounting.filters``), which is valid
against an analyst who adapts to every answer. This module composes a *fixed* multiset of terms
the way the earlier accountants did, for benchmarks and tests (it is the "natural filter" that
the filters are measured against, and the negative control that shows why it is not used):

- ``basic``: epsilons and deltas add up, exactly (Fractions).
- ``zcdp``: each term becomes (approximate) zero-concentrated DP (Bun & Steinke 2016; Canonne,
  Kamath & Steinke 2020): rhos and deltas add; the history is
  (rho + 2 sqrt(rho ln(1 / d)), sum(delta) + d)-DP for d = D - sum(delta).
- ``pld``: numerical composition of privacy-loss distributions with Google's dp-accounting
  (pessimistic discretisation), capped by the zCDP bound of the same terms.

Every accountant's epsilon is also capped by basic composition. dp-accounting (numpy, scipy) is
imported only when a PLD is asked for.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.terms import losses_of

__all__ = ["losses_of"]  # re-exported: older callers read terms from here

AccountantName = Literal["pld", "zcdp", "basic"]
ACCOUNTANTS: tuple[AccountantName, ...] = ("pld", "zcdp", "basic")
DEFAULT_ACCOUNTANT: AccountantName = "pld"

# dp-accounting's grid for privacy-loss values: every PLD must share it to be composed. A loss is
# rounded up to the next multiple (pessimistic), which over-states by at most this per release.
DISCRETISATION = 1e-4
# A composed PLD's support grows with the total loss: past this many grid steps of total (basic)
# epsilon the grid doubles until it fits (a coarser grid is still pessimistic; it over-states the
# total by at most one step per release: n / PLD_STEPS of it for n releases). Without this a budget of
# epsilon 1000 took a minute per headroom search: millions of points per composition.
PLD_STEPS = 1_000_000
# Above this integer sensitivity the exact discrete PLD's construction grows too large; the pure
# (epsilon, 0) PLD is used instead (it dominates every epsilon-DP mechanism, so it is still sound).
MAX_EXACT_SENSITIVITY = 1000
# Terms above this epsilon are composed by plain addition next to the PLD (exp(epsilon) overflows).
BIG_EPSILON = 50
# Float results are rounded up by this relative margin (and 1e-15 absolute).
_MARGIN = 1e-9
# How many one-copy ``add`` results a composition keeps.
_ADDED_MEMO = 4


def _up(value: float) -> Fraction:
    """A Fraction no smaller than ``value`` by more than float noise: value * (1 + margin) + 1e-15."""
    return Fraction(value * (1 + _MARGIN) + 1e-15)


def _float_up(value: Fraction) -> float:
    """The smallest float >= value."""
    f = float(value)
    return f if Fraction(f) >= value else math.nextafter(f, math.inf)


def _float_down(value: Fraction) -> float:
    """The largest float <= value."""
    f = float(value)
    return f if Fraction(f) <= value else math.nextafter(f, -math.inf)


LossKey = tuple[object, ...]


class _LossKey(tuple[object, ...]):
    """A term's key that hashes its Fractions once (pure-Python Fraction hashing dominated a
    charge: every tally lookup of a plain tuple rehashes them). Equal to the plain tuple."""

    _hash: int

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = tuple.__hash__(self)
            return self._hash


def _key(loss: PrivacyLoss) -> LossKey:
    """What determines a term's composition (terms with equal keys are self-composed at once)."""
    return _LossKey((loss.family, loss.epsilon, loss.delta, loss.sensitivity, loss.scale, loss.sigma2, loss.rho,
                     tuple(_key(part) for part in loss.parts)))


def _pld_terms(losses: Sequence[PrivacyLoss]) -> list[PrivacyLoss]:
    """What the PLD accountant composes: a zcdp term with parts as its parts, others as they are."""
    return [part for loss in losses for part in (loss.parts or (loss,))]


@dataclass(frozen=True, slots=True, eq=False)
class _Step:
    """What adding one copy of a sequence of terms changes, computed once per sequence: each
    term's key, and the exact sums every composition extends by (basic epsilon and delta, the
    zCDP rho and the deltas of approximate terms, the PLD's terms above BIG_EPSILON)."""

    losses: tuple[PrivacyLoss, ...]
    keys: tuple[LossKey, ...]
    epsilon: Fraction
    delta: Fraction
    rho: Fraction
    approx_delta: Fraction
    big_epsilon: Fraction
    big_delta: Fraction


# The last steps computed, by the identity of their terms tuple (a charge record's terms are one
# tuple, extended onto the history at every charge of that query); the tuple is held, so its id
# cannot be reused while it is here.
_STEPS: dict[int, _Step] = {}
_MAX_STEPS = 256
# One key object per distinct key, so that a history's tally and a new charge's terms share them
# and dict lookups match by identity instead of comparing Fractions (equal keys: same answers).
_KEYS: dict[LossKey, LossKey] = {}
_MAX_KEYS = 4096


def _interned(key: LossKey) -> LossKey:
    known = _KEYS.get(key)
    if known is not None:
        return known
    if len(_KEYS) >= _MAX_KEYS:
        _KEYS.clear()
    _KEYS[key] = key
    return key


def _step(losses: Sequence[PrivacyLoss]) -> _Step:
    known = _STEPS.get(id(losses))
    if known is not None and known.losses is losses:
        return known
    terms = tuple(losses)
    big = [x for x in _pld_terms(terms) if x.epsilon > BIG_EPSILON]
    step = _Step(terms, tuple(_interned(_key(x)) for x in terms),
                 sum((x.epsilon for x in terms), Fraction(0)), sum((x.delta for x in terms), Fraction(0)),
                 # A zCDP or Gaussian term is rho-zCDP outright; an (epsilon, delta) term also consumes its delta.
                 sum((zcdp_rho(x) for x in terms), Fraction(0)),
                 sum((x.delta for x in terms if x.family in ("approx_dp", "discrete_laplace")), Fraction(0)),
                 sum((x.epsilon for x in big), Fraction(0)), sum((x.delta for x in big), Fraction(0)))
    if isinstance(losses, tuple):
        if len(_STEPS) >= _MAX_STEPS:
            _STEPS.clear()
        _STEPS[id(losses)] = step
    return step


def _plus(total: Fraction, part: Fraction, times: int) -> Fraction:
    """total + times * part, without Fraction arithmetic where it changes nothing."""
    if not part or not times:
        return total
    return total + (part if times == 1 else times * part)


class Composition(ABC):
    """The composed losses of one history: a multiset of terms (immutable: ``add`` returns a new
    composition). What an accountant says of it depends on the multiset alone, never on the
    order terms were added in, so a history rebuilt from grouped rows, extended one charge at a
    time, or extended by ``times`` copies at once is judged identically."""

    def __init__(self, epsilon: Fraction = Fraction(0), delta: Fraction = Fraction(0), count: int = 0,
                 tally: Mapping[LossKey, int] | None = None, reps: Mapping[LossKey, PrivacyLoss] | None = None) -> None:
        self.basic_epsilon = epsilon  # the exact basic-composition sums, a cap for every accountant
        self.basic_delta = delta
        self.count = count  # terms composed
        self.tally: Mapping[LossKey, int] = tally or {}  # term key -> how many times (never mutated)
        self._reps: Mapping[LossKey, PrivacyLoss] = reps or {}  # one term per key
        self._epsilons: dict[Fraction, Fraction | None] = {}  # epsilon_at, memoised (the object never changes)
        # The last few ``add`` results of one copy (the object never changes): a query's fail-fast
        # check and its charge extend the same cached history by the same terms; the second is a lookup.
        self._added: list[tuple[tuple[PrivacyLoss, ...], Composition]] = []

    def add(self, losses: Sequence[PrivacyLoss], times: int = 1) -> Composition:
        """This history followed by ``times`` copies of ``losses``."""
        if times < 0:
            raise ValueError("times must be >= 0")
        if times != 1:  # a headroom search's many copies: not kept (their PLDs can be large)
            return self._add(losses, times)
        terms = tuple(losses)
        for known, added in self._added:  # compared, not hashed: equal terms, equal result
            if known is terms or known == terms:
                return added
        added = self._add(terms, 1)
        self._added = [*self._added[-(_ADDED_MEMO - 1):], (terms, added)]
        return added

    def _add(self, losses: Sequence[PrivacyLoss], times: int) -> Composition:
        step = _step(losses)
        tally, reps = dict(self.tally), dict(self._reps)
        for key, loss in zip(step.keys, step.losses):
            tally[key] = tally.get(key, 0) + times
            reps.setdefault(key, loss)
        epsilon = _plus(self.basic_epsilon, step.epsilon, times)
        delta = _plus(self.basic_delta, step.delta, times)
        return self._extended(epsilon, delta, self.count + times * len(step.losses), tally, reps, step, times)

    @abstractmethod
    def _extended(self, epsilon: Fraction, delta: Fraction, count: int, tally: dict[LossKey, int],
                  reps: dict[LossKey, PrivacyLoss], step: _Step, times: int) -> Composition:
        """The subclass's composition of the extended multiset."""

    @abstractmethod
    def _tight_epsilon(self, delta: Fraction) -> Fraction | None:
        """The accountant's own epsilon at ``delta`` (None: unbounded)."""

    def covers(self, other: Composition) -> bool:
        """Whether ``other``'s terms are a sub-multiset of these (then, if these fit a budget,
        ``other``'s do: dropping releases never costs privacy)."""
        return all(self.tally.get(key, 0) >= n for key, n in other.tally.items())

    def epsilon_at(self, delta: Fraction) -> Fraction | None:
        """The epsilon spent at ``delta`` (the history is (epsilon, delta)-DP); None when no finite
        epsilon holds (e.g. the terms' deltas alone pass ``delta``)."""
        if delta not in self._epsilons:
            basic = self.basic_epsilon if self.basic_delta <= delta else None
            tight = self._tight_epsilon(delta) if self.count else Fraction(0)
            candidates = [e for e in (basic, tight) if e is not None]
            self._epsilons[delta] = min(candidates) if candidates else None
        return self._epsilons[delta]

    def fits(self, budget: PrivacyCost) -> bool:
        """Whether the history is within ``budget``: epsilon at the budget's delta <= its epsilon
        (under basic composition, or under the accountant's own bound)."""
        if self.basic_epsilon <= budget.epsilon and self.basic_delta <= budget.delta:
            return True
        return self._tight_fits(budget)

    def _tight_fits(self, budget: PrivacyCost) -> bool:
        spent = self._tight_epsilon(budget.delta) if self.count else Fraction(0)
        return spent is not None and spent <= budget.epsilon

    def headroom(self, losses: Sequence[PrivacyLoss], budget: PrivacyCost, limit: int = 10**9) -> int:
        """The largest j <= ``limit`` with this history plus j copies of ``losses`` within
        ``budget`` (``fits`` is monotone in j: more releases never cost less). Galloping from
        what basic composition already allows, then bisection: about 2 log2(j) compositions."""
        epsilon = sum((x.epsilon for x in losses), Fraction(0))
        delta = sum((x.delta for x in losses), Fraction(0))
        if not losses or (epsilon == 0 and delta == 0 and self.fits(budget)):
            return limit if self.fits(budget) else 0
        lo = limit  # basic composition's own count is a floor: those copies fit by the cap
        if epsilon:
            lo = min(lo, max(0, math.floor((budget.epsilon - self.basic_epsilon) / epsilon)))
        if delta:
            lo = min(lo, max(0, math.floor((budget.delta - self.basic_delta) / delta)))
        if self.basic_epsilon > budget.epsilon or self.basic_delta > budget.delta:
            lo = 0
        if lo == 0:
            if not self.add(losses).fits(budget):
                return 0
            lo = 1
        hi = lo * 2
        while hi <= limit and self.add(losses, hi).fits(budget):
            lo, hi = hi, hi * 2
        if hi > limit:
            hi = limit + 1
            if self.add(losses, limit).fits(budget):
                return limit
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.add(losses, mid).fits(budget) else (lo, mid)
        return lo

    def spent(self, budget: PrivacyCost) -> PrivacyCost:
        """What the history spent, as read against ``budget``: epsilon at the budget's delta and
        the deltas the terms consume outright (basic composition when no finite epsilon holds)."""
        epsilon = self.epsilon_at(budget.delta)
        if epsilon is None:
            return PrivacyCost(self.basic_epsilon, min(self.basic_delta, Fraction(999_999, 1_000_000)))
        return PrivacyCost(epsilon, min(self.basic_delta, budget.delta))

    def _terms(self) -> list[tuple[PrivacyLoss, int]]:
        """(term, times) of each key, in a canonical order (the key's repr)."""
        return [(self._reps[key], self.tally[key]) for key in sorted(self.tally, key=repr) if self.tally[key]]


class BasicComposition(Composition):
    """Epsilons and deltas add up, exactly."""

    def _extended(self, epsilon: Fraction, delta: Fraction, count: int, tally: dict[LossKey, int],
                  reps: dict[LossKey, PrivacyLoss], step: _Step, times: int) -> BasicComposition:
        return BasicComposition(epsilon, delta, count, tally, reps)

    def _tight_epsilon(self, delta: Fraction) -> Fraction | None:
        return None  # the basic cap is the whole answer


def zcdp_rho(loss: PrivacyLoss) -> Fraction:
    """The rho of one term (exact): epsilon^2 / 2 for (approximate) DP, s^2 / (2 sigma^2) for a
    discrete Gaussian, rho for a zCDP term."""
    if loss.family == "zcdp" and loss.rho is not None:
        return loss.rho
    if loss.family == "discrete_gaussian" and loss.sigma2 and loss.sensitivity is not None:
        return loss.sensitivity ** 2 / (2 * loss.sigma2)
    return loss.epsilon ** 2 / 2


class ZcdpComposition(Composition):
    """Rhos add; deltas of approximate terms add (delta-approximate zCDP)."""

    def __init__(self, epsilon: Fraction = Fraction(0), delta: Fraction = Fraction(0), count: int = 0,
                 tally: Mapping[LossKey, int] | None = None, reps: Mapping[LossKey, PrivacyLoss] | None = None,
                 rho: Fraction = Fraction(0), approx_delta: Fraction = Fraction(0)) -> None:
        super().__init__(epsilon, delta, count, tally, reps)
        self.rho = rho
        self.approx_delta = approx_delta

    def _extended(self, epsilon: Fraction, delta: Fraction, count: int, tally: dict[LossKey, int],
                  reps: dict[LossKey, PrivacyLoss], step: _Step, times: int) -> ZcdpComposition:
        return ZcdpComposition(epsilon, delta, count, tally, reps, rho=_plus(self.rho, step.rho, times),
                               approx_delta=_plus(self.approx_delta, step.approx_delta, times))

    def _tight_epsilon(self, delta: Fraction) -> Fraction | None:
        left = delta - self.approx_delta
        if self.rho == 0:
            return Fraction(0) if left >= 0 else None
        if left <= 0:
            return None
        rho = _float_up(self.rho)
        return _up(rho + 2 * math.sqrt(rho * math.log(1 / _float_down(left))))


def _pld_module() -> Any:
    from dp_accounting.pld import privacy_loss_distribution  # numpy/scipy only when a PLD is asked for

    return privacy_loss_distribution


def preload() -> None:
    """Import the PLD library now (0.6-1.2 s): a long-running process (the server) calls it at
    startup in the background, so its first budget report does not pay the import."""
    _pld_module()


def _pure_or_approx_pld(epsilon: Fraction, delta: Fraction, grid: float = DISCRETISATION) -> Any:
    from dp_accounting.pld import common

    params = common.DifferentialPrivacyParameters(_float_up(epsilon), _float_up(delta))
    return _pld_module().from_privacy_parameters(params, value_discretization_interval=grid)


def pld_grid(total_epsilon: Fraction) -> float:
    """The loss grid for a composition of this total basic epsilon: DISCRETISATION, doubled until
    the total spans at most PLD_STEPS steps (powers of two keep the memoised PLDs few)."""
    grid = DISCRETISATION
    while total_epsilon / Fraction(grid) > PLD_STEPS:
        grid *= 2
    return grid


def pld_of(loss: PrivacyLoss) -> Any:
    """The pessimistic privacy-loss distribution of one term (a dp-accounting object, shared:
    composing never modifies it)."""
    return _pld_of(_key(loss)[:6])


@functools.lru_cache(maxsize=256)
def _pld_of(key: tuple[Any, ...], grid: float = DISCRETISATION) -> Any:
    family, epsilon, delta, sensitivity, scale, sigma2 = key
    loss = PrivacyLoss(family, "", epsilon, delta, sensitivity, scale, sigma2)
    pld = _pld_module()
    if loss.family == "discrete_laplace" and loss.scale and loss.sensitivity:
        k = math.ceil(loss.sensitivity)
        if k <= MAX_EXACT_SENSITIVITY:
            # pmf proportional to exp(-|x| / scale): parameter 1 / scale, rounded up (more loss).
            return pld.from_discrete_laplace_mechanism(_float_up(1 / loss.scale), sensitivity=k,
                                                       value_discretization_interval=grid)
        return _pure_or_approx_pld(loss.epsilon, Fraction(0), grid)
    if loss.family == "discrete_gaussian" and loss.sigma2 and loss.sensitivity:
        k = math.ceil(loss.sensitivity)
        if k <= MAX_EXACT_SENSITIVITY:
            sigma = math.nextafter(math.sqrt(_float_down(loss.sigma2)), 0.0)  # rounded down (more loss)
            return pld.from_discrete_gaussian_mechanism(sigma, sensitivity=k, value_discretization_interval=grid)
    return _pure_or_approx_pld(loss.epsilon, loss.delta, grid)


@functools.lru_cache(maxsize=8)  # a composed PLD can take megabytes: keep a few
def _self_composed(key: tuple[Any, ...], times: int, grid: float = DISCRETISATION) -> Any:
    """``times`` copies of one term's PLD (memoised: a headroom search asks for the same ones)."""
    single = _pld_of(key, grid)
    return single if times == 1 else single.self_compose(times)


class PldComposition(Composition):
    """Composed by dp-accounting's privacy-loss distributions, computed when first asked for
    (charges certified by a known-fitting superset never compose anything)."""

    def __init__(self, epsilon: Fraction = Fraction(0), delta: Fraction = Fraction(0), count: int = 0,
                 tally: Mapping[LossKey, int] | None = None, reps: Mapping[LossKey, PrivacyLoss] | None = None,
                 big: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0)), zcdp: ZcdpComposition | None = None) -> None:
        super().__init__(epsilon, delta, count, tally, reps)
        # Terms with epsilon > BIG_EPSILON stay out of the PLD (their distributions overflow floats)
        # and are added by basic composition: (e1, d1) then (e2, d2) is (e1 + e2, d1 + d2)-DP.
        self.big = big
        # The zCDP bound of the same terms, a second cap: where every loss is far below the PLD's
        # 1e-4 grid (Gaussian noise of large sigma), rounding each one up over-states more than zCDP.
        self.zcdp = zcdp if zcdp is not None else ZcdpComposition()
        self._pld: Any = None
        self._composed = False

    def _extended(self, epsilon: Fraction, delta: Fraction, count: int, tally: dict[LossKey, int],
                  reps: dict[LossKey, PrivacyLoss], step: _Step, times: int) -> PldComposition:
        big_sum = (_plus(self.big[0], step.big_epsilon, times), _plus(self.big[1], step.big_delta, times))
        zcdp = self.zcdp._extended(epsilon, delta, count, tally, reps, step, times)
        return PldComposition(epsilon, delta, count, tally, reps, big_sum, zcdp)

    @property
    def pld(self) -> Any:
        """The composed PrivacyLossDistribution of the terms up to BIG_EPSILON (None: none): the
        self-composition of each distinct term, composed in a canonical order."""
        if not self._composed:
            composed = None
            grid = pld_grid(self.basic_epsilon - self.big[0])  # one grid for every term: PLDs compose only on a shared grid
            for loss, times in self._terms():
                # A zcdp term with parts is composed through its parts' exact distributions.
                counts = Counter(_key(term)[:6] for term in _pld_terms([loss]) if term.epsilon <= BIG_EPSILON)
                for key in sorted(counts, key=repr):
                    part = _self_composed(key, times * counts[key], grid)
                    composed = part if composed is None else composed.compose(part)
            self._pld, self._composed = composed, True
        return self._pld

    def _tight_fits(self, budget: PrivacyCost) -> bool:
        return self.zcdp._tight_fits(budget) or self._pld_fits(budget)  # both bounds hold: either suffices

    def _tight_epsilon(self, delta: Fraction) -> Fraction | None:
        candidates = [e for e in (self._pld_epsilon(delta), self.zcdp._tight_epsilon(delta)) if e is not None]
        return min(candidates) if candidates else None

    def _pld_fits(self, budget: PrivacyCost) -> bool:
        # epsilon(D) <= E iff delta(E) <= D (delta(eps) is continuous and non-increasing), and the
        # library computes delta(E) with numpy, epsilon(D) in a Python loop. E is rounded down and
        # delta(E) up, so rounding can only refuse.
        left = budget.epsilon - self.big[0]
        if left < 0:
            return False
        if self.pld is None:
            return self.big[1] <= budget.delta
        delta = float(self.pld.get_delta_for_epsilon(_float_down(left)))
        return delta * (1 + _MARGIN) + 1e-18 + _float_up(self.big[1]) <= budget.delta

    def _pld_epsilon(self, delta: Fraction) -> Fraction | None:
        left = delta - self.big[1]
        if left < 0:
            return None
        if self.pld is None:
            return self.big[0]
        epsilon = self.pld.get_epsilon_for_delta(_float_down(left))
        return None if math.isinf(epsilon) else _up(max(0.0, epsilon)) + self.big[0]


@dataclass(frozen=True, slots=True)
class Accountant:
    """A named accountant: builds empty compositions."""

    name: AccountantName

    def empty(self) -> Composition:
        if self.name == "pld":
            return PldComposition()
        if self.name == "zcdp":
            return ZcdpComposition()
        return BasicComposition()

    def compose(self, histories: Iterable[Sequence[PrivacyLoss]]) -> Composition:
        """All the terms of ``histories`` (one sequence per ledger entry), composed."""
        return self.empty().add([loss for entry in histories for loss in entry])

    def compose_counted(self, groups: Iterable[tuple[Sequence[PrivacyLoss], int]]) -> Composition:
        """Each group's terms ``times`` times (ledger rows grouped by identical content)."""
        composition = self.empty()
        for losses, times in groups:
            composition = composition.add(losses, times)
        return composition


def accountant(name: str) -> Accountant:
    """The accountant of that name ("pld", "zcdp" or "basic")."""
    if name not in ACCOUNTANTS:
        raise ValueError(f"unknown accountant {name!r}: use one of {', '.join(ACCOUNTANTS)}")
    return Accountant(name)
