"""Plan MEDIAN/QUANTILE (SMed, PTR-Laplace, exponential mechanism), IQR (Scale) and MODE
(report-noisy-max over declared values; else the stable-histogram mode or A_samp: planner/mode_choice.py).

Every parameter comes from the policy, the query and its budget share, never from data:
- k = max_rows (rows one person keeps); the rank shift s = ceil(k max(p, 1 - p));
- G = groups one person can touch: 1 without GROUP BY, else min(k, product of public domain
  sizes) (a person keeps at most k rows, each in one group); the PTR tests use DLap(G/eps)
  and delta/G per group (see dpsql/mechanisms/ptr.py);
- the SMed grid is the column's `precision` (else 1 for int/date, else a 1-2-5 step from the
  bounds: ir.plan.median_grid); the EM grid is the precision (int/date: 1), else the 1-2-5
  step over 2^16 steps of the bounds, coarsened by powers of two until the candidates fit in 2^16
  (quantile_mechanism = 'exponential'); the default fine-grid EM (MEDIAN, QUANTILE, MIN, MAX, IQR of
  a bounded column) uses 2^24 steps, since it reads rank windows, not a histogram;
- Scale's base beta uses n_hat, a DP count: a COUNT the query already releases, else a count of
  the column's rows that the IQR pays for with a tenth of its share;
- MODE's B is OPTIONS (mode_blocks = B), else max(200, 8 (tau + 4 G/eps)): 200 is the design
  note's choice without n_hat (5.4), raised when tau is so large that 200 votes could never pass.
A rank request reads a histogram when the mapped column has at most 2^16 possible values
(public: bounds and grid), else rank windows of +-(C + 1) s around each quantile.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from dpsql.analysis.bind import quantile_mechanism
from dpsql.ir.plan import (
    Bounding,
    ModeRequest,
    RankRequest,
    RawAggregate,
    Release,
    RobustRelease,
    ValueMap,
    median_grid,
)
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms.exponential import ExponentialIQRSpec, ExponentialQuantileSpec
from dpsql.mechanisms.histogram_mode import HistogramModeSpec
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.noisy_max import NoisyMaxModeSpec
from dpsql.mechanisms.ptr import PTRLaplaceSpec, PTRTest, ScaleSpec, SMedSpec
from dpsql.mechanisms.ranks import rank_shift
from dpsql.mechanisms.subsample import ASampSpec, default_blocks
from dpsql.mechanisms.window_exponential import IQRIntervalSpec, QuantileIntervalSpec
from dpsql.planner.mode_choice import choose as choose_mode

HISTOGRAM_MAX_VALUES = 1 << 16
EM_MAX_CANDIDATES = 1 << 16
FINE_STEPS = 1 << 24
FINE_MAX_CANDIDATES = 1 << 26
NHAT_SHARE = Fraction(1, 10)
QUARTILES = (Fraction(1, 4), Fraction(3, 4))


def needs_delta(call: AggregateCall, query: BoundQuery) -> bool:
    """Whether the aggregate's mechanism spends delta (every one but the exponential mechanism)."""
    if call.kind == "iqr":
        return not _em_iqr(call, query)
    if call.kind == "mode":
        return not _noisy_max_mode(call, query)
    return not (call.kind == "quantile" and _quantile_mechanism(call, query) in ("exponential", "exponential-fine"))


def _quantile_mechanism(call: AggregateCall, query: BoundQuery) -> str:
    """The quantile's mechanism (public facts only); MIN and MAX (p = 0, 1) always the fine-grid EM."""
    bounded = call.column is not None and call.column.bounded
    if call.quantile in (0, 1):
        return "exponential-fine"
    return quantile_mechanism(call.bound, query.quantile_mechanism, bounded)


def _noisy_max_mode(call: AggregateCall, query: BoundQuery) -> bool:
    """MODE of a column with declared values: report-noisy-max over the per-value counts (pure
    epsilon, never ⊥), unless OPTIONS (mode_blocks = B) asks for A_samp. A_samp needs each of its
    B subsamples to agree, which few persons per subsample rarely do (1,744 subsamples of about 3
    persons at 10k rows, epsilon 0.1: refused 20/20), while the noisy counts' error is k/eps rows."""
    return bool(call.column is not None and call.column.values) and query.mode_blocks is None


def _fine_iqr(call: AggregateCall, query: BoundQuery) -> bool:
    """IQR by two fine-grid EM quartiles with their intervals: the default on a bounded column."""
    return call.column is not None and call.column.bounded and query.quantile_mechanism is None


def _em_iqr(call: AggregateCall, query: BoundQuery) -> bool:
    """IQR of a bounded column: Q3 - Q1 of two EM quartiles, unless the query asks for the PTR family
    (quantile_mechanism = 'smed' or 'ptr_laplace': Scale, clamped to [0, upper - lower]). Scale's 95% error factor
    beta^(ln 20 / eps') (eps' = a quarter of the share, beta = min(2, 1 + 60 s tau / n_hat)) is
    astronomically large unless n_hat >> 60 s tau (e.g. 1e40 at 100k rows and epsilon 0.1), while
    the EM quartiles' rank error is O(k log(K) / eps) ranks and the release is in [0, upper - lower]."""
    return call.column is not None and call.column.bounded and query.quantile_mechanism in (None, "exponential")


def person_groups(query: BoundQuery, bounding: Bounding) -> int:
    """G: how many groups one person's rows can fall in."""
    if not query.keys:
        return 1
    groups = bounding.max_rows
    if all(key.public for key in query.keys):
        domain = 1
        for key in query.keys:
            domain *= len(key.column.values or ())
        groups = min(groups, max(domain, 1))
    return groups


@dataclass
class RobustPlanner:
    """Builds RobustRelease nodes, their engine requests, and any n_hat count they need."""

    query: BoundQuery
    bounding: Bounding
    releases: list[Release]
    groups: int
    requests: list[RankRequest | ModeRequest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # EXPLAIN notes on public choices (MODE's mechanism)
    _windows: dict[ValueMap, dict[Fraction, int]] = field(default_factory=dict)
    _order: list[object] = field(default_factory=list)

    def plan(self, index: int, call: AggregateCall, epsilon: Fraction, delta: Fraction) -> RobustRelease:
        """The robust release of aggregate `index` with its (epsilon, delta) share."""
        if call.kind == "mode":
            return self._mode(index, call, epsilon, delta)
        if call.kind == "iqr":
            return self._iqr(index, call, epsilon, delta)
        return self._quantile(index, call, epsilon, delta)

    def finish(self) -> tuple[RankRequest | ModeRequest, ...]:
        """The engine requests, windows of one mapped column merged into one request."""
        out: list[RankRequest | ModeRequest] = []
        for item in self._order:
            if isinstance(item, ValueMap):
                windows = tuple(sorted(self._windows[item].items()))
                size = item.domain_size
                out.append(RankRequest(item, windows, histogram=size is not None and size <= HISTOGRAM_MAX_VALUES))
            else:
                out.append(item)  # type: ignore[arg-type]
        return tuple(out)

    # --- requests ---------------------------------------------------------------------------
    def _rank_request(self, values: ValueMap, windows: dict[Fraction, int]) -> int:
        if values not in self._windows:
            self._windows[values] = {}
            self._order.append(values)
        merged = self._windows[values]
        for p, reach in windows.items():
            merged[p] = max(merged.get(p, 0), reach)
        return self._order.index(values)

    def _value_map(self, call: AggregateCall, grid: Fraction | None) -> ValueMap:
        column = call.column
        assert column is not None
        return ValueMap(column, grid, column.lower, column.upper)

    # --- mechanisms ---------------------------------------------------------------------------
    def _quantile(self, index: int, call: AggregateCall, epsilon: Fraction, delta: Fraction) -> RobustRelease:
        p = call.quantile
        assert p is not None and call.column is not None
        k = self.bounding.max_rows
        mechanism = _quantile_mechanism(call, self.query)
        if mechanism == "exponential-fine":
            values = self._fine_values(call)
            span = values.index_range
            assert span is not None
            fine = QuantileIntervalSpec(epsilon, p, k, span[0], span[1])
            return RobustRelease(index, fine, self._rank_request(values, fine.windows), values)
        if mechanism == "exponential":
            values = self._em_values(call)
            span = values.index_range
            assert span is not None
            spec = ExponentialQuantileSpec(epsilon, p, k, span[0], span[1])
            return RobustRelease(index, spec, self._rank_request(values, {p: 0}), values)
        shift = rank_shift(k, p)
        if mechanism == "ptr-laplace":
            assert call.bound is not None
            test = PTRTest(epsilon / 2, delta, self.groups)
            ptr_spec = PTRLaplaceSpec(test, epsilon / 2, p, shift, call.bound)
            values = self._value_map(call, None)
            ptr_spec = replace(ptr_spec, lower=values.lower, upper=values.upper)  # the release is clamped to the bounds
            return RobustRelease(index, ptr_spec, self._rank_request(values, {p: ptr_spec.reach}), values)
        smed = SMedSpec(PTRTest(epsilon, delta, self.groups), p, shift)
        values = self._value_map(call, median_grid(call.column))
        return RobustRelease(index, smed, self._rank_request(values, {p: smed.reach}), values)

    def _em_values(self, call: AggregateCall) -> ValueMap:
        grid = median_grid(call.column, EM_MAX_CANDIDATES)  # type: ignore[arg-type]
        assert grid is not None
        values = self._value_map(call, grid)
        while (values.domain_size or 0) > EM_MAX_CANDIDATES:
            grid *= 2
            values = self._value_map(call, grid)
        return values

    def _fine_values(self, call: AggregateCall) -> ValueMap:
        """The fine public grid: the precision (int/date: 1), else the 1-2-5 step over 2^24 steps of the
        bounds; coarsened by powers of two until at most 2^26 candidates (policy only)."""
        grid = median_grid(call.column, FINE_STEPS)  # type: ignore[arg-type]
        assert grid is not None
        values = self._value_map(call, grid)
        while (values.domain_size or 0) > FINE_MAX_CANDIDATES:
            grid *= 2
            values = self._value_map(call, grid)
        return values

    def _iqr(self, index: int, call: AggregateCall, epsilon: Fraction, delta: Fraction) -> RobustRelease:
        column = call.column
        assert column is not None
        k = self.bounding.max_rows
        if _fine_iqr(call, self.query):
            values = self._fine_values(call)
            span = values.index_range
            assert span is not None
            fine = IQRIntervalSpec(epsilon, k, span[0], span[1])
            return RobustRelease(index, fine, self._rank_request(values, fine.windows), values)
        if _em_iqr(call, self.query):
            values = self._em_values(call)
            span = values.index_range
            assert span is not None
            em = ExponentialIQRSpec(epsilon, k, span[0], span[1])
            return RobustRelease(index, em, self._rank_request(values, {q: 0 for q in QUARTILES}), values)
        n_hat = self._reusable_count(column.name)
        if n_hat is None:
            raw = RawAggregate("count_finite", column) if column.type == "float" else RawAggregate("count_values", column)
            self.releases.append(Release(raw, LaplaceSpec(Fraction(k), epsilon * NHAT_SHARE)))
            n_hat, epsilon = len(self.releases) - 1, epsilon * (1 - NHAT_SHARE)
        values = self._value_map(call, None)
        width = None if values.lower is None or values.upper is None else values.upper - values.lower
        spec = ScaleSpec(epsilon / 4, delta, self.groups, rank_shift(k, QUARTILES[1]), span=width)
        request = self._rank_request(values, {q: spec.reach for q in QUARTILES})
        return RobustRelease(index, spec, request, values, n_hat=n_hat)

    def _reusable_count(self, column: str) -> int | None:
        for position, release in enumerate(self.releases):
            raw = release.raw
            if raw.kind == "count_rows" or (raw.kind in ("count_values", "count_finite") and raw.column is not None
                                            and raw.column.name == column):
                return position
        return None

    def _mode(self, index: int, call: AggregateCall, epsilon: Fraction, delta: Fraction) -> RobustRelease:
        assert call.column is not None
        if _noisy_max_mode(call, self.query):
            spec_max = NoisyMaxModeSpec(epsilon, self.bounding.max_rows, tuple(call.column.values or ()))
            counts = ModeRequest(call.column, 1, counts=True)
            self._order.append(counts)
            return RobustRelease(index, spec_max, len(self._order) - 1)
        test = PTRTest(epsilon, delta, self.groups)
        spec = ASampSpec(test, blocks=self.query.mode_blocks or default_blocks(test))
        if self.query.mode_blocks is None:  # no declared values: A_samp or the histogram (public facts only)
            histogram = HistogramModeSpec(epsilon, delta, self.bounding.max_rows)
            choice = choose_mode(histogram, spec)
            if choice.note not in self.notes:
                self.notes.append(choice.note)
            if choice.mechanism == "stable-histogram":
                counts = ModeRequest(call.column, 1, counts=True)
                self._order.append(counts)
                return RobustRelease(index, histogram, len(self._order) - 1)
        request = ModeRequest(call.column, spec.blocks)
        self._order.append(request)
        return RobustRelease(index, spec, len(self._order) - 1)
