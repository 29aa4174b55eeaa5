"""Which strategy the layer runs, chosen from public facts only (docs/mechanisms.md).

* identity: the whole reservation buys ONE noisy histogram of X (discrete Gaussian per cell in
  zCDP mode, discrete Laplace in pure mode); every counting query over X is then post-processing
  (the sum of its cells' noisy counts): no sparse vector, no hard answers, no halting. Chosen
  when even the query that sums every cell of X stays within the accuracy target A at 95%, i.e.
  when |X| is small relative to (A·ε)^2 (for a target A tied to n, small relative to n·ε).
* pmw: private multiplicative weights with a warm start. A share of the reservation measures a
  noisy histogram of X (when a half-domain query of it is already within A/2) or the noisy
  two-way marginals of the columns (one-way for two columns); the public model starts from that
  measurement projected to a distribution; the sparse vector decides per query whether the
  model's answer is accurate (easy: free) or not (hard: fresh noise, then a multiplicative-weights
  update). After c hard answers the layer halts and the ordinary per-query path answers.

Whether the layer is on (`LayerPlan.decide`): always for identity; for pmw when it is expected to
answer at least as many counting queries within A as per-query noise would on the same reservation.
Per-query noise answers Q_pq = ε·A/(Δ·ln 20) queries (pure: discrete Laplace of scale A/ln 20 is
within A at 95%) or 2ρ(A/1.96)²/Δ² (zCDP: discrete Gaussian with σ = A/1.96), all public. The layer
answers c / h before halting, c its hard slots and h = DEFAULT_HARD_SHARE the share of a correlated
workload that needs a hard answer after a warm start (public assumption, 2%: measured 0.3% on the
issue's 1,500 drill-downs and 1-2% on correlated workloads at 10^6 persons; random workloads and
budget-starved settings need more, and the layer then halts into per-query noise). On iff c / h >= min(Q, Q_pq), Q the
policy's `expected_queries` or DEFAULT_EXPECTED_QUERIES. An explicit `min_hard_slots` replaces the
rule (on iff c >= it). When off, the reason names the reservation epsilon and the accuracy that
would turn it on.

Inputs: mode, ε, δ, A, β, Δ (max_rows), expected queries and the domain's column sizes. Nothing
here reads data.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpsql.mechanisms.sparse_vector import Mode, SVTCalibration, calibrate, rho_from_epsilon_delta

Strategy = Literal["identity", "pmw"]
Z95 = 1.96
WARM_SHARE = Fraction(1, 3)  # of the reservation, for the warm start of the pmw strategy
DEFAULT_EXPECTED_QUERIES = 1000  # the workload the decision assumes when the policy names none
DEFAULT_HARD_SHARE = Fraction(1, 50)  # of a warm-started correlated workload's queries that need a hard answer


@dataclass(frozen=True)
class LayerPlan:
    """The public plan of one layer: its strategy, its measurement, and (pmw) its sparse vector."""

    strategy: Strategy
    calibration: SVTCalibration
    axes: tuple[tuple[int, ...], ...]  # the measured marginals (column positions); identity: all columns
    measurement: str  # "histogram" | "2-way marginals" | "1-way marginals"
    reason: str

    @property
    def cell_sigma2(self) -> Fraction | None:
        """zCDP: sigma^2 of each measured cell."""
        return self.calibration.warm_sigma2 if self.calibration.mode == "zcdp" else None

    @property
    def cell_scale(self) -> Fraction | None:
        """Pure: discrete Laplace scale of each measured cell."""
        return self.calibration.warm_scale if self.calibration.mode == "pure" else None

    def cell_std(self) -> float:
        """The standard deviation of one measured cell's noise."""
        if self.calibration.mode == "zcdp":
            return math.sqrt(float(self.calibration.warm_sigma2))
        return math.sqrt(2.0) * float(self.calibration.warm_scale)

    @property
    def per_query_capacity(self) -> int:
        """Counting queries per-query noise answers within A at 95% on this reservation (public)."""
        cal = self.calibration
        if cal.accuracy < 1:
            return 0
        if cal.mode == "zcdp":
            assert cal.rho is not None
            sigma = cal.accuracy / Z95
            return math.floor(2 * float(cal.rho) * sigma * sigma / cal.sensitivity ** 2)
        return math.floor(float(cal.epsilon) * cal.accuracy / (cal.sensitivity * math.log(20)))

    @property
    def layer_capacity(self) -> int:
        """Counting queries the layer is expected to answer before it halts: c / DEFAULT_HARD_SHARE."""
        return math.floor(self.calibration.cap / DEFAULT_HARD_SHARE)

    def decide(self, min_hard_slots: int | None = None) -> tuple[bool, str]:
        """(on, why) from public facts only; `min_hard_slots` (the policy's, when set) replaces the rule."""
        cal = self.calibration
        if self.strategy == "identity":
            return True, self.reason
        if min_hard_slots is not None:
            on = cal.cap >= min_hard_slots
            return on, (f"{cal.cap} hard slot(s), {'at least' if on else 'fewer than'} min_hard_slots = {min_hard_slots} "
                        "(set in the policy)")
        workload = cal.expected_queries or DEFAULT_EXPECTED_QUERIES
        rival = min(workload, self.per_query_capacity)
        on = cal.cap >= 1 and self.layer_capacity >= rival
        return on, (f"{cal.cap} hard slot(s) answer about {self.layer_capacity:,} counting queries (at "
                    f"{float(DEFAULT_HARD_SHARE):.0%} hard) {'>=' if on else '<'} {rival:,}, what per-query noise answers "
                    f"within A = {cal.accuracy:,} on the same reservation (of an expected {workload:,})")

    def sum_ci95(self, cells: int) -> int:
        """About the 95% half-width of the sum of `cells` measured cells (normal approximation for
        Gaussian noise; for Laplace noise the one-cell quantile, conservative for sums)."""
        if cells <= 0:
            return 0
        # Laplace sums: ln(20)/sqrt(2) = 2.12 standard deviations is one cell's exact 95% point and
        # an upper bound for sums of more cells (which tend to the normal 1.96).
        z = Z95 if self.calibration.mode == "zcdp" else math.log(20) / math.sqrt(2)
        return math.ceil(z * self.cell_std() * math.sqrt(cells))


MAX_MARGINALS = 64


def _measurement_axes(columns: int, choice: str) -> tuple[tuple[int, ...], ...]:
    if choice == "histogram" or columns == 1:
        return (tuple(range(columns)),)
    order = int(choice[0])
    return tuple(itertools.combinations(range(columns), order))


def _marginal_choice(mode: Mode, epsilon: Fraction, delta: Fraction, accuracy: float, sensitivity: int,
                     sizes: tuple[int, ...]) -> str:
    """The highest-order k-way marginals (k < number of columns) whose typical query (a quarter of a
    marginal's cells) the warm start answers within A at 95%; 1-way marginals otherwise."""
    columns = len(sizes)
    for order in range(columns - 1, 1, -1):
        axes = list(itertools.combinations(range(columns), order))
        if len(axes) > MAX_MARGINALS or sum(math.prod(sizes[i] for i in ax) for ax in axes) > math.prod(sizes):
            continue
        cells = max(math.prod(sizes[i] for i in ax) for ax in axes)
        std = _cell_std(mode, epsilon, delta, sensitivity, len(axes), WARM_SHARE)
        if Z95 * std * math.sqrt(cells / 4) <= accuracy:
            return f"{order}-way marginals"
    return "1-way marginals"


def _cell_std(mode: Mode, epsilon: Fraction, delta: Fraction, sensitivity: int, releases: int, share: Fraction) -> float:
    """The noise std of one measured cell when `share` of the reservation measures `releases` vectors."""
    if mode == "zcdp":
        rho = float(rho_from_epsilon_delta(epsilon, delta)) * float(share)
        return sensitivity * math.sqrt(releases / (2 * rho))
    return math.sqrt(2.0) * sensitivity * releases / (float(epsilon) * float(share))


def plan_layer(*, mode: Mode, epsilon: Fraction, delta: Fraction, accuracy: Fraction, sensitivity: int,
               sizes: tuple[int, ...], beta: Fraction = Fraction(1, 20), expected_queries: int | None = None,
               strategy: Strategy | None = None, warm_start: bool = True, renewal: bool = False,
               measurement: str | None = None) -> LayerPlan:
    """The strategy and its calibration from public inputs (`strategy` forces one: tests, benchmarks).

    `renewal`: a further reservation after the pmw layer halted (session chaining): the learned
    model is kept, so no warm start and no size release; the budget goes to the sparse vector and
    the hard answers.
    """
    cells = math.prod(sizes)
    columns = len(sizes)
    target = float(accuracy)
    identity_ci = Z95 * _cell_std(mode, epsilon, delta, sensitivity, 1, Fraction(1)) * math.sqrt(cells)
    forced = strategy is not None
    if strategy is None:
        strategy = "identity" if identity_ci <= target else "pmw"
    if strategy == "identity":
        cal = calibrate(mode=mode, epsilon=epsilon, delta=delta, accuracy=accuracy, sensitivity=sensitivity, beta=beta,
                        cap=0, warm_share=Fraction(999_999, 1_000_000), warm_releases=1)
        reason = (("set by the policy; " if forced else f"|X| = {cells:,} is small for this budget: ")
                  + f"one noisy histogram answers even the query over all cells within about +-{identity_ci:,.0f} "
                  + ("<=" if identity_ci <= target else ">") + f" A = {target:,.0f} at 95%; every counting query is "
                  "post-processing of it (no sparse vector, never halts)")
        return LayerPlan("identity", cal, _measurement_axes(columns, "histogram"), "histogram", reason)
    histogram_ci = Z95 * _cell_std(mode, epsilon, delta, sensitivity, 1, WARM_SHARE) * math.sqrt(cells / 2)
    if measurement is not None:
        choice = measurement  # forced (tests, benchmarks)
    elif histogram_ci <= target / 2 or columns == 1:
        choice = "histogram"
    else:
        choice = _marginal_choice(mode, epsilon, delta, target, sensitivity, sizes)
    axes = _measurement_axes(columns, choice)
    if renewal:
        cal = calibrate(mode=mode, epsilon=epsilon, delta=delta, accuracy=accuracy, sensitivity=sensitivity, beta=beta,
                        expected_queries=expected_queries, warm_share=Fraction(1, 10**6), warm_releases=0)
        return LayerPlan("pmw", cal, (), "none (the learned model is kept)", "a renewal of a halted layer")
    share = WARM_SHARE if warm_start else Fraction(0)
    cal = calibrate(mode=mode, epsilon=epsilon, delta=delta, accuracy=accuracy, sensitivity=sensitivity, beta=beta,
                    expected_queries=expected_queries, warm_share=share, warm_releases=len(axes) if warm_start else 0)
    reason = (("set by the policy (" if forced else f"|X| = {cells:,} is large for this budget (")
              + f"one noisy histogram would be off by about +-{identity_ci:,.0f} on the query over all cells, "
              f"A = {target:,.0f}): private multiplicative "
              f"weights, warm-started from the noisy {choice} ({float(share):.3g} of the reservation), "
              f"{cal.cap} hard answers before it halts")
    return LayerPlan("pmw", cal, axes, choice, reason)


def turn_on_hint(*, mode: Mode, epsilon: Fraction, delta: Fraction, accuracy: Fraction, sensitivity: int,
                 sizes: tuple[int, ...], beta: Fraction = Fraction(1, 20), expected_queries: int | None = None,
                 min_hard_slots: int | None = None) -> str:
    """Which single setting would turn an off layer on (the policy's min_hard_slots, else the auto rule;
    public: calibrations only): the smallest reservation epsilon and the smallest accuracy, each alone."""

    def on(eps: Fraction, acc: Fraction) -> bool:
        plan = plan_layer(mode=mode, epsilon=eps, delta=delta, accuracy=acc, sensitivity=sensitivity, sizes=sizes,
                          beta=beta, expected_queries=expected_queries)
        return plan.decide(min_hard_slots)[0]

    def with_epsilon(x: Fraction) -> bool:
        return on(x, accuracy)

    def with_accuracy(x: Fraction) -> bool:
        return on(epsilon, x)

    hints = []
    for name, value, make in (("epsilon", epsilon, with_epsilon), ("accuracy", accuracy, with_accuracy)):
        low, high = value, value * 2
        for _ in range(12):
            if make(high):
                break
            low, high = high, high * 2
        else:
            continue
        for _ in range(20):  # bisect to a round figure (3 significant digits)
            middle = (low + high) / 2
            if make(Fraction(f"{float(middle):.3g}")):
                high = Fraction(f"{float(middle):.3g}")
            else:
                low = middle
            if high - low <= high / 1000:
                break
        hints.append(f"{name} = {float(high):.3g}")
    if not hints:
        return "set strategy = \"identity\" or min_hard_slots to force it"
    return " or ".join(hints) + " would turn it on (or set min_hard_slots to force it)"
