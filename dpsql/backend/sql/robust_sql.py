"""Engine SQL (sqlglot expressions only) and reads (`reads`: statements yielded one at a time, answered
by the executor) for the robust aggregates' raw requests.

Every request reads the session's bounded relation with the Laplace query's row filter (the
analyst's WHERE inside TRY, public key domains) and group keys, maps the column per row
(ir.plan.ValueMap: drop NULL/NaN/+-inf, dates to ordinals, clamp to public bounds, grid index),
and computes, per group, exactly what the mechanism reads:

- histogram (the mapped column has at most 2^16 possible values, known from the policy):
  `SELECT keys, v, count(*) ... GROUP BY keys, v`: one scan.
- rank windows, ungrouped on DuckDB with a bounded value map: two statements, a coarse
  histogram (per public bucket of width W = 2^j, about 2^12 buckets over the index range: counts
  only), then the distinct values with their counts in the buckets that hold the ranks
  rho_p(n) -+ reach (`bucket_select`, `range_select`; see `bucket_windows`).
- rank windows (otherwise): one statement. A first scan counts n per group and takes
  reservoir_quantile of v at a fixed ladder of quantiles p -+ 2^-j; SQL then picks, per group,
  the narrowest rung wide enough for +-(C + 1) s ranks plus 5 standard deviations of the sample
  quantile, and a second scan returns count_if(v < lo) and the sorted values in [lo, hi]. The
  bracket only decides how much is read: Python checks that the exact ranks rho_p(n) -+ reach
  are inside, and if a rare bracket misses, an exact window-function query (row_number per group)
  is run instead. Either way the mechanism sees exact order statistics.
- MODE by counts (report-noisy-max, stable histogram): per group, the rows of each declared
  value, or of each value present (NULL and NaN dropped), in one GROUP BY.
- MODE by A_samp: one statement. Each person goes to subsample block_hash(unit, $mode_seed) % B (so all
  their rows go there, T = 1; bitwise integer arithmetic for integer units); per (group, subsample) the most frequent value wins, ties broken by
  hash(value, subsample, $tie_seed) (ARG_MIN, no window); per group, the votes each value got. Empty subsamples are
  absent, i.e. abstain. No Python loop over rows.
Seeds are fresh secret per-query parameters, drawn by the session after the charge.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Generator, Hashable, Mapping
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.backend.sql.engine_dialects import DayNumber, HashBits, IsFinite, KeyedHash, WideInt, hash_input
from dpsql.backend.sql.plan_sql import key_sql, number, ordered, row_filter
from dpsql.catalog.policy import Column
from dpsql.ir.plan import ModeRequest, Plan, RankRequest, ValueMap
from dpsql.ir.query import key_name
from dpsql.mechanisms.ranks import CountedWindows, Histogram, OrderStatistics, WindowedOrderStatistics, quantile_rank

GroupKey = tuple[Any, ...]
RESERVOIR_UNGROUPED = 65536
RESERVOIR_GROUPED = 4096
LADDER = tuple(Fraction(1, 2**j) for j in range(1, 17))  # quantile half-widths 1/2 .. 2^-16
SIGMAS = 5
MODE_SEED, TIE_SEED = "mode_seed", "tie_seed"
VALUE, COUNT, N, BELOW, WINDOW, RANK, VOTES, MODE = "__v", "__c", "__n", "__below", "__win", "__rk", "__votes", "__mode"
BUCKET = "__bucket"
BUCKETS = 1 << 12  # the coarse histogram's buckets over the index range (at most; public)
PREFILTER_LIMIT = 1 << 40  # grid indices up to this are exact enough in a DOUBLE for the raw-column prefilter


@dataclass(frozen=True)
class RobustQuery:
    """The engine SQL of one raw request: the statement to run, and the exact fallback (windows)."""

    request: RankRequest | ModeRequest
    main: exp.Select
    fallback: exp.Select | None = None
    scan: exp.Select | None = None  # ungrouped windows: the second statement, bracket bound as $lo/$hi
    exact: bool = False  # main is the exact window query itself (engines without reservoir_quantile)
    width: int | None = None  # two-stage read: main is the coarse histogram of buckets this wide, scan the range read

    def statements(self) -> tuple[tuple[exp.Select, dict[str, Any]], ...]:
        """Every statement with placeholder values (dry runs on an empty table, EXPLAIN)."""
        out: list[tuple[exp.Select, dict[str, Any]]] = [(self.main, {MODE_SEED: 0, TIE_SEED: 0} if self.seeded else {})]
        if self.scan is not None:
            assert isinstance(self.request, RankRequest)
            names: tuple[str, ...] = ("lo", "hi", "from", "to")
            if self.width is not None:
                names = ("lo", "hi", "xlo", "xhi") if _prefilters(self.request.values) else ("lo", "hi")
            out.append((self.scan, {f"{name}{i}": 0 for i in range(len(self.request.windows)) for name in names}))
        if self.fallback is not None:
            out.append((self.fallback, {}))
        return tuple(out)

    @property
    def seeded(self) -> bool:
        """Whether the statement takes the $mode_seed and $tie_seed parameters."""
        return self.request.seeded


# DuckDB's plan shortcuts (DuckDBBackend.capabilities; EXPLAIN prints its SQL for these).
DUCKDB_CAPABILITIES = frozenset({"reservoir_quantile", "bind_time_checks", "bucketed_ranks"})


def robust_queries(plan: Plan, relation: str, capabilities: frozenset[str] = DUCKDB_CAPABILITIES) -> tuple[RobustQuery, ...]:
    """One RobustQuery per request of the plan, reading `relation` (bounded, or empty for dry runs).

    Windows of order statistics use DuckDB's reservoir_quantile to bracket the ranks when the
    engine has it; elsewhere (Spark) the exact window query runs directly. Both return the same
    exact order statistics, so the released values agree.
    """
    out = []
    for request in plan.requests:
        if isinstance(request, ModeRequest):
            out.append(RobustQuery(request, mode_select(plan, request, relation)))
        elif request.histogram:
            out.append(RobustQuery(request, histogram_select(plan, request, relation)))
        elif "reservoir_quantile" not in capabilities:
            out.append(RobustQuery(request, exact_window_select(plan, request, relation), exact=True))
        elif not plan.query.keys and "bucketed_ranks" in capabilities and request.values.index_range is not None:
            width = bucket_width(request.values)
            out.append(RobustQuery(request, bucket_select(plan, request, relation, width), exact_window_select(plan, request, relation),
                                   range_select(plan, request, relation), width=width))
        elif plan.query.keys:
            out.append(RobustQuery(request, window_select(plan, request, relation), exact_window_select(plan, request, relation)))
        else:
            out.append(RobustQuery(request, sample_select(plan, request, relation), exact_window_select(plan, request, relation),
                                   scan_select(plan, request, relation)))
    return tuple(out)


# --- value maps and the base relation ------------------------------------------------------------


def value_expr(values: ValueMap) -> exp.Expr:
    """The per-row mapped value: date -> ordinal, grid index clamped to the public index range.

    Clamping to the bounds is monotone, so it commutes with order statistics: raw values are
    clamped in Python on the few values that come back (`clamp`), and a grid index is clamped
    to the index range here (the same as indexing the clamped value).
    """
    column = exp.column(values.column.name, quoted=True)
    value: exp.Expr = column
    if values.column.type == "date":
        value = DayNumber(this=column)
    if not values.indexed:
        return value
    # Clamp before the cast: a huge value must not make the cast fail (an error that depends on
    # data, after the charge). Unbounded columns keep +-2^62 indices.
    low, high = values.index_range or (-(2**62), 2**62)
    assert values.grid is not None
    scaled = exp.Div(this=value, expression=number(values.grid))
    clamped = exp.func("least", exp.func("greatest", scaled, exp.Literal.number(low)), exp.Literal.number(high))
    return exp.cast(exp.func("round", clamped), "BIGINT", copy=False)


def _present(column: Column, keep_infinite: bool = False) -> exp.Expr:
    name = exp.column(column.name, quoted=True)
    if column.type == "date" and not keep_infinite:
        return IsFinite(this=name, kind=exp.Literal.string("date"))  # +-infinity dates are dropped like NaN
    if column.type == "float":
        if keep_infinite:
            return exp.and_(exp.Not(this=exp.Is(this=name, expression=exp.Null())), exp.Not(this=exp.func("isnan", name.copy())))
        return IsFinite(this=name, kind=exp.Literal.string("float"))  # NULL for NULL, so the row drops
    return exp.Not(this=exp.Is(this=name, expression=exp.Null()))


def _keys(plan: Plan) -> list[exp.Expr]:
    return [_as(key_sql(k), key_name(i)) for i, k in enumerate(plan.query.keys)]


def _key_names(plan: Plan) -> list[str]:
    return [key_name(i) for i in range(len(plan.query.keys))]


def base_select(plan: Plan, values: ValueMap, relation: str, value: exp.Expr | None = None) -> exp.Select:
    """Keys and the mapped value (or `value`) of every row that passes the query's filter and has a value."""
    condition = row_filter(plan)
    present = _present(values.column)
    where = exp.and_(condition, present, copy=False) if condition is not None else present
    mapped = value if value is not None else value_expr(values)
    # Every part is built fresh here (the filter, keys and value): no builder copies.
    return (exp.select(*_keys(plan), _as(mapped, VALUE), copy=False).from_(exp.to_identifier(relation, quoted=True), copy=False)
            .where(where, copy=False))


# --- histogram path ------------------------------------------------------------------------------


def histogram_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """Per group and mapped value, the number of rows."""
    names = _key_names(plan)
    return (
        exp.select(*names, VALUE, _as(exp.Count(this=exp.Star()), COUNT), copy=False)
        .from_(base_select(plan, request.values, relation).subquery("__b", copy=False), copy=False)
        .group_by(*names, VALUE, copy=False)
    )


# --- two-stage path (ungrouped, bounded value map) -------------------------------------------------
#
# Privacy: nothing read here is released; the mechanisms release draws whose distribution is a
# function of the exact order statistics x_(rho -+ reach) alone (the fine-grid EM: of its clipped
# scores, which are the public cap T outside those ranks), and both statements return exactly
# those (plus other exact values of the same buckets), so the releases and their privacy argument
# are those of the single read. Which buckets the second statement reads is decided by the ranks
# rho_p(n) -+ reach (public reach, exact n) and the public bucket boundaries, like the windows
# themselves; the bucket counts never leave this module.


def bucket_width(values: ValueMap) -> int:
    """W = 2^j, the least power of two with at most BUCKETS buckets over the index range (public)."""
    size = values.domain_size
    assert size is not None
    width = 1
    while -(-size // width) > BUCKETS:
        width *= 2
    return width


def _bounded_value(values: ValueMap) -> exp.Expr:
    """The mapped value clamped to the index range (grid indices already are; ints and dates
    on their unit grid are clamped here, which commutes with order statistics, as `clamp`)."""
    value = value_expr(values)
    if values.indexed:
        return value
    span = values.index_range
    assert span is not None
    return exp.func("least", exp.func("greatest", value, exp.Literal.number(span[0])), exp.Literal.number(span[1]))


def _two_stage_base(plan: Plan, values: ValueMap, relation: str, prefilter: exp.Expr | None = None) -> exp.Select:
    base = base_select(plan, values, relation, _bounded_value(values))
    return base.where(prefilter, copy=False) if prefilter is not None else base


def bucket_select(plan: Plan, request: RankRequest, relation: str, width: int) -> exp.Select:
    """First statement: rows per public bucket (v - lower) // W (counts only)."""
    span = request.values.index_range
    assert span is not None
    bucket = exp.IntDiv(this=exp.paren(exp.Sub(this=exp.column(VALUE), expression=exp.Literal.number(span[0]))),
                        expression=exp.Literal.number(width))
    return (exp.select(_as(bucket, BUCKET), _as(exp.Count(this=exp.Star()), COUNT), copy=False)
            .from_(_two_stage_base(plan, request.values, relation).subquery("__b", copy=False), copy=False)
            .group_by(exp.column(BUCKET), copy=False))


def _prefilters(values: ValueMap) -> bool:
    """Whether the range read also filters the raw column (a grid index of a number: the raw
    comparison is cheap and lets the engine skip computing the index for most rows)."""
    return values.indexed and values.column.type in ("int", "float")


def range_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """Second statement: every mapped value in [$lo_i, $hi_i] (any window i) with its count, sorted.

    With `_prefilters`, rows must also have the raw value in [$xlo_i, $xhi_i] for some i, a
    superset of the rows whose index lies in [$lo_i, $hi_i] (`_raw_bounds`), so it changes no count.
    """
    value = exp.column(VALUE)
    inside = exp.or_(*[exp.Between(this=value.copy(), low=exp.Placeholder(this=f"lo{i}"), high=exp.Placeholder(this=f"hi{i}"))
                       for i in range(len(request.windows))])
    prefilter = None
    if _prefilters(request.values):
        raw = exp.column(request.values.column.name, quoted=True)
        prefilter = exp.or_(*[exp.and_(exp.GTE(this=raw.copy(), expression=exp.Placeholder(this=f"xlo{i}")),
                                       exp.LTE(this=raw.copy(), expression=exp.Placeholder(this=f"xhi{i}")))
                              for i in range(len(request.windows))])
    return (exp.select(VALUE, _as(exp.Count(this=exp.Star()), COUNT), copy=False)
            .from_(_two_stage_base(plan, request.values, relation, prefilter).subquery("__b", copy=False), copy=False)
            .where(inside, copy=False).group_by(VALUE, copy=False).order_by(VALUE, copy=False))


def _raw_bounds(values: ValueMap, low: int, high: int) -> tuple[float, float]:
    """Raw-value bounds [xlo, xhi] holding every row whose index round(clamp(x) / g) lies in [low, high].

    One grid step of margin each side: x < (low - 1) g gives x / g < low - 1 + (float error, far
    below 1/2 for indices under 2^40), so its index is below `low`; likewise above. An end at the
    index range's own bound also holds the clamped rows: it stays open (+-inf)."""
    span, grid = values.index_range, values.grid
    assert span is not None and grid is not None
    if max(abs(low), abs(high)) >= PREFILTER_LIMIT:
        return -math.inf, math.inf
    xlo, xhi = -math.inf, math.inf
    if low > span[0]:
        exact = (low - 1) * grid
        xlo = float(exact)
        if xlo > exact:
            xlo = math.nextafter(xlo, -math.inf)
    if high < span[1]:
        exact = (high + 1) * grid
        xhi = float(exact)
        if xhi < exact:
            xhi = math.nextafter(xhi, math.inf)
    return xlo, xhi


@dataclass(frozen=True)
class BucketWindow:
    """The values of one rank window's buckets: [low, high] in index units, the rows below `low`
    and the rows inside (from the coarse histogram)."""

    below: int
    low: int
    high: int
    rows: int


def bucket_windows(request: RankRequest, width: int, buckets: list[tuple[int, int]]) -> tuple[int, list[BucketWindow]]:
    """n, and per window (p, reach) the buckets that hold the ranks max(1, rho - reach) .. min(n, rho + reach).

    Only those ranks' values are needed (the engine's single read returns exactly them); the
    buckets around them hold them all, and the rows below the first such bucket are counted
    exactly by the buckets before it, so every value read has its exact rank."""
    span = request.values.index_range
    assert span is not None
    ordered = sorted(buckets)
    cumulative, total = [], 0
    for _, count in ordered:
        total += int(count)
        cumulative.append(total)
    out: list[BucketWindow] = []
    if not total:
        return 0, out
    for p, reach in request.windows:
        rho = quantile_rank(total, p)
        first, last = max(1, rho - reach), min(total, rho + reach)
        start, stop = bisect.bisect_left(cumulative, first), bisect.bisect_left(cumulative, last)
        below = cumulative[start - 1] if start else 0
        low = span[0] + int(ordered[start][0]) * width
        high = min(span[1], span[0] + (int(ordered[stop][0]) + 1) * width - 1)
        out.append(BucketWindow(below, low, high, cumulative[stop] - below))
    return total, out


def _range_params(request: RankRequest, windows: list[BucketWindow]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for i, window in enumerate(windows):
        params[f"lo{i}"], params[f"hi{i}"] = window.low, window.high
        if _prefilters(request.values):
            params[f"xlo{i}"], params[f"xhi{i}"] = _raw_bounds(request.values, window.low, window.high)
    return params


def counted_windows(n: int, windows: list[BucketWindow], pairs: list[tuple[Any, Any]]) -> CountedWindows | None:
    """The range read's (value, count) pairs, sorted, cut into the windows; None if a window's
    rows differ from the coarse histogram's (never expected: both read the same relation)."""
    values = tuple(map(operator.itemgetter(0), pairs))  # ints already (BIGINT columns)
    counts = tuple(map(operator.itemgetter(1), pairs))
    parts = []
    for window in windows:
        start, stop = bisect.bisect_left(values, window.low), bisect.bisect_right(values, window.high)
        cumulative = tuple(itertools.accumulate(itertools.islice(counts, start, stop)))
        if not cumulative or cumulative[-1] != window.rows:
            return None
        parts.append((window.below, tuple(values[start:stop]), cumulative))
    return CountedWindows(n, tuple(parts))


# --- windowed path -------------------------------------------------------------------------------


def _ladder(request: RankRequest) -> tuple[list[Fraction], dict[tuple[int, int, str], int]]:
    """The constant quantile list of reservoir_quantile and where each (window, rung, side) sits."""
    index: dict[Fraction, int] = {}
    position: dict[tuple[int, int, str], int] = {}
    for i, (p, _) in enumerate(request.windows):
        for j, half in enumerate(LADDER):
            for side, q in (("lo", p - half), ("hi", p + half)):
                if 0 <= q <= 1:
                    position[(i, j, side)] = index.setdefault(q, len(index) + 1)
    return list(index), position


def _need(plan: Plan, p: Fraction, reach: int) -> exp.Expr:
    """(reach + 1)/n + 5 sqrt(p(1-p)/min(n, R)) + 2/min(n, R), as a DOUBLE over the group's n."""
    n = exp.cast(exp.column(N), "DOUBLE")
    sample = exp.func("least", n.copy(), exp.Literal.number(_reservoir(plan)))
    spread = exp.func("sqrt", exp.Div(this=number(p * (1 - p)), expression=sample))
    return exp.Add(
        this=exp.Add(this=exp.Div(this=exp.Literal.number(reach + 1), expression=n),
                     expression=exp.Mul(this=exp.Literal.number(SIGMAS), expression=spread)),
        expression=exp.Div(this=exp.Literal.number(2), expression=sample.copy()),
    )


def _reservoir(plan: Plan) -> int:
    return RESERVOIR_GROUPED if plan.query.keys else RESERVOIR_UNGROUPED


def _bracket(request: RankRequest, window: int, side: str, position: dict[tuple[int, int, str], int]) -> exp.Expr:
    ifs = []
    for j in reversed(range(len(LADDER))):  # narrowest rung first
        at = position.get((window, j, side))
        value = exp.Anonymous(this="list_extract", expressions=[exp.column("__q"), exp.Literal.number(at)]) if at else exp.Null()
        ifs.append(exp.If(this=exp.LTE(this=exp.column(f"__need{window}"), expression=number(LADDER[j])), true=value))
    return exp.Case(ifs=ifs, default=exp.Null())


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name))


def _columns(*names: str) -> list[exp.Column]:
    return [exp.column(n) for n in names]


def _as(expression: exp.Expr, name: str) -> exp.Alias:
    """expression AS name, without the copy exp.alias_ makes (these trees are built fresh)."""
    return exp.Alias(this=expression, alias=exp.to_identifier(name))


def _rho(n: exp.Expr, p: Fraction) -> exp.Expr:
    """rho_p(n) = greatest(1, ceil(n p)) in integer SQL: (n a + b - 1) // b for p = a/b (HUGEINT: no overflow)."""
    return exp.func("greatest", exp.Literal.number(1), exp.IntDiv(
        this=exp.paren(exp.Add(this=exp.Mul(this=WideInt(this=n), expression=exp.Literal.number(p.numerator)),
                               expression=exp.Literal.number(p.denominator - 1))),
        expression=exp.Literal.number(p.denominator)))


def sample_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """Ungrouped windows, first statement: n and reservoir_quantile at the ladder's quantiles."""
    quantiles, _ = _ladder(request)
    return exp.select(
        _as(exp.Count(this=exp.Star()), N),
        _as(exp.Anonymous(this="reservoir_quantile", expressions=[
            exp.column(VALUE), exp.Array(expressions=[number(q) for q in quantiles]), exp.Literal.number(_reservoir(plan))]), "__q"),
        copy=False).from_(base_select(plan, request.values, relation).subquery("__b", copy=False), copy=False)


def scan_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """Ungrouped windows, second statement: per window count(v < $lo) and the sorted v in
    [$lo, $hi] cut to ranks $from..$to (only those leave the engine). NULL bounds are open."""
    value = exp.column(VALUE)
    inner: list[exp.Expr] = []
    outer: list[exp.Expr] = []
    for i in range(len(request.windows)):
        lo, hi = exp.Placeholder(this=f"lo{i}"), exp.Placeholder(this=f"hi{i}")
        inside = exp.and_(
            exp.or_(exp.Is(this=lo.copy(), expression=exp.Null()), exp.GTE(this=value.copy(), expression=lo.copy())),
            exp.or_(exp.Is(this=hi.copy(), expression=exp.Null()), exp.LTE(this=value.copy(), expression=hi.copy())),
        )
        below = exp.func("coalesce", exp.func("count_if", exp.LT(this=value.copy(), expression=lo.copy())), exp.Literal.number(0))
        inner.append(_as(below, f"{BELOW}{i}"))
        bracketed = exp.Filter(this=exp.ArrayAgg(this=value.copy()), expression=exp.Where(this=inside))
        inner.append(_as(exp.Anonymous(this="list_sort", expressions=[bracketed]), f"__all{i}"))
        first = exp.func("greatest", exp.Literal.number(1), exp.Sub(this=exp.Placeholder(this=f"from{i}"), expression=exp.column(f"{BELOW}{i}")))
        last = exp.Sub(this=exp.Placeholder(this=f"to{i}"), expression=exp.column(f"{BELOW}{i}"))
        outer += [exp.column(f"{BELOW}{i}"), _as(exp.Anonymous(this="len", expressions=[exp.column(f"__all{i}")]), f"__size{i}"),
                  _as(exp.Add(this=exp.column(f"{BELOW}{i}"), expression=first), f"__first{i}"),
                  _as(exp.Anonymous(this="list_slice", expressions=[exp.column(f"__all{i}"), first.copy(), last]), f"{WINDOW}{i}")]
    scan = exp.select(*inner, copy=False).from_(base_select(plan, request.values, relation).subquery("__b", copy=False), copy=False)
    return exp.select(*outer, copy=False).from_(scan.subquery("__w", copy=False), copy=False)


def _brackets(plan: Plan, request: RankRequest, n: int, sample: list[Any] | None) -> dict[str, Any]:
    """$lo/$hi/$from/$to of `scan_select`: the narrowest ladder rung wide enough (same rule as `_need`)."""
    _, position = _ladder(request)
    reservoir = min(max(n, 1), _reservoir(plan))
    params: dict[str, Any] = {}
    for i, (p, reach) in enumerate(request.windows):
        need = (reach + 1) / max(n, 1) + SIGMAS * math.sqrt(float(p * (1 - p)) / reservoir) + 2 / reservoir
        rung = next((j for j in reversed(range(len(LADDER))) if need <= LADDER[j]), None)
        for side in ("lo", "hi"):
            at = position.get((i, rung, side)) if rung is not None else None
            params[f"{side}{i}"] = sample[at - 1] if at and sample else None
        rho = quantile_rank(n, p)
        params[f"from{i}"], params[f"to{i}"] = rho - reach, rho + reach
    return params


def window_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """Per group: n, and per window count(v < lo), the bracket's size, and the exact ranks
    rho -+ reach cut from the sorted bracket (its first rank too), in one statement.

    The base relation is inlined in both scans (a CTE read twice would be materialised).
    """
    names = _key_names(plan)
    quantiles, position = _ladder(request)
    sample = exp.select(
        *_columns(*names), _as(exp.Count(this=exp.Star()), N),
        _as(exp.Anonymous(this="reservoir_quantile", expressions=[
            exp.column(VALUE), exp.Array(expressions=[number(q) for q in quantiles]), exp.Literal.number(_reservoir(plan))]), "__q"),
        copy=False).from_(base_select(plan, request.values, relation).subquery("__b", copy=False), copy=False)
    if names:
        sample = sample.group_by(*_columns(*names), copy=False)
    needs = [_as(_need(plan, p, reach), f"__need{i}") for i, (p, reach) in enumerate(request.windows)]
    brackets = [_as(_bracket(request, i, side, position), f"__{side}{i}")
                for i in range(len(request.windows)) for side in ("lo", "hi")]
    inner = exp.select(*_columns(*names, N, "__q"), *needs, copy=False).from_(_table("__s"), copy=False).subquery("__nd", copy=False)
    bracket = exp.select(*_columns(*names, N), *brackets, copy=False).from_(inner, copy=False)
    value = exp.column(VALUE, "__b")
    columns: list[exp.Expr] = [*[exp.column(n, "__br") for n in names], exp.column(N, "__br")]
    outer: list[exp.Expr] = [*_columns(*names, N)]
    for i, (p, reach) in enumerate(request.windows):
        lo, hi = exp.column(f"__lo{i}", "__br"), exp.column(f"__hi{i}", "__br")
        inside = exp.and_(
            exp.or_(exp.Is(this=lo.copy(), expression=exp.Null()), exp.GTE(this=value.copy(), expression=lo.copy())),
            exp.or_(exp.Is(this=hi.copy(), expression=exp.Null()), exp.LTE(this=value.copy(), expression=hi.copy())),
        )
        below = exp.func("coalesce", exp.func("count_if", exp.LT(this=value.copy(), expression=lo.copy())), exp.Literal.number(0))
        columns.append(_as(below, f"{BELOW}{i}"))
        bracketed = exp.Filter(this=exp.ArrayAgg(this=value.copy()), expression=exp.Where(this=inside))
        columns.append(_as(exp.Anonymous(this="list_sort", expressions=[bracketed]), f"__all{i}"))
        # Only ranks rho - reach .. rho + reach leave the engine: positions in the sorted bracket.
        rho = _rho(exp.column(N), p)
        first = exp.func("greatest", exp.Literal.number(1), exp.Sub(this=exp.Sub(this=rho, expression=exp.Literal.number(reach)),
                                                                    expression=exp.column(f"{BELOW}{i}")))
        last = exp.Sub(this=exp.Add(this=rho.copy(), expression=exp.Literal.number(reach)), expression=exp.column(f"{BELOW}{i}"))
        outer += [exp.column(f"{BELOW}{i}"), _as(exp.Anonymous(this="len", expressions=[exp.column(f"__all{i}")]), f"__size{i}"),
                  _as(exp.Add(this=exp.column(f"{BELOW}{i}"), expression=first), f"__first{i}"),
                  _as(exp.Anonymous(this="list_slice", expressions=[exp.column(f"__all{i}"), first.copy(), last]), f"{WINDOW}{i}")]
    scan = exp.select(*columns, copy=False).from_(base_select(plan, request.values, relation).subquery("__b", copy=False), copy=False)
    if names:
        on = exp.and_(*[exp.NullSafeEQ(this=exp.column(n, "__b"), expression=exp.column(n, "__br")) for n in names])
        scan = scan.join(_table("__br"), on=on, copy=False)
    else:
        scan = scan.join(_table("__br"), join_type="CROSS", copy=False)
    scan = scan.group_by(*[exp.column(n, "__br") for n in names], exp.column(N, "__br"), copy=False)
    result = exp.select(*outer, copy=False).from_(scan.subquery("__w", copy=False), copy=False)
    return result.with_("__s", as_=sample, copy=False).with_("__br", as_=bracket, copy=False)


def exact_window_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """The windows by exact ranks (row_number per group): the fallback when a bracket misses."""
    names = _key_names(plan)
    value = exp.column(VALUE)
    partition = [exp.column(n) for n in names]
    order = exp.Order(expressions=[ordered(value.copy())])
    ranked = exp.select(*names, VALUE,
                        _as(exp.Window(this=exp.RowNumber(), partition_by=partition, order=order), RANK),
                        _as(exp.Window(this=exp.Count(this=exp.Star()), partition_by=[p.copy() for p in partition]), N),
                        copy=False).from_(base_select(plan, request.values, relation).subquery("__b", copy=False), copy=False)
    conditions = []
    for p, reach in request.windows:
        rho = _rho(exp.column(N), p)
        conditions.append(exp.Between(this=exp.column(RANK), low=exp.Sub(this=rho, expression=exp.Literal.number(reach)),
                                      high=exp.Add(this=rho.copy(), expression=exp.Literal.number(reach))))
    return (exp.select(*names, N, RANK, VALUE, copy=False).from_(ranked.subquery("__r", copy=False), copy=False)
            .where(exp.or_(*conditions, copy=False), copy=False))


# --- MODE ------------------------------------------------------------------------------------------


BLOCK_X = "__x"  # block_hash_layers: the column holding the previous layer
BLOCK_MASK = 2**31 - 1  # the hash works on 31-bit lanes: every product below stays under 2^62


def block_hash(unit: exp.Expr, unit_type: str) -> exp.Expr:
    """A person's secret subsample hash in [0, 2^31) under $mode_seed (MODE's A_samp).

    Integer units: fold u to 31 bits, x = (u ^ (u >> 31) ^ (u >> 62)) & M with M = 2^31 - 1,
    then two keyed rounds x -> ((x ^ k) * a) & M, each followed by x ^ (x >> s) (s = 16, 15),
    with k1, a1, k2, a2 = HashBits($mode_seed, 1..4) & M (a1, a2 made odd). The coefficients
    depend on the parameter only, so the engine folds them to constants once per query; per row
    this is bitwise arithmetic and two products below 2^62, no division (the rounds mod 2^31 - 1
    this replaces made MODE 3.2x raw DuckDB's mode() at 1M rows, with the window below). & (on two's complement), ^ and
    the arithmetic >> are the same on DuckDB and Spark, nothing overflows, so both engines assign
    the same blocks. Multiply-xorshift rounds are the structure of MurmurHash3's finaliser: on
    sequential or strided ids the block counts are as spread as random subsamples' (a chi-square
    near its degrees of freedom; tests/unit/backend/test_block_hash.py), where one affine round
    alone puts them on a lattice, far more even than random (a near-tied MODE was then released
    where random blocks refuse). Other units (text, dates) keep HashBits($mode_seed, u).

    Privacy: A_samp's guarantee needs only that every person is in exactly one block, by a rule
    that does not read the data: removing a person changes one block. The block of u is a
    function of u and the secret per-query seed alone, whatever the coefficients are. The seed
    only buys utility (blocks that behave like random subsamples); units equal in their folded
    31 bits always share a block, which costs randomness, never privacy.
    """
    layers = block_hash_layers(unit, unit_type)
    hashed = layers[0]
    for layer in layers[1:]:
        hashed = _substitute(layer, hashed)
    return hashed


def _substitute(layer: exp.Expr, previous: exp.Expr) -> exp.Expr:
    """`layer` with every reference to the column BLOCK_X replaced by `previous`."""
    return layer.transform(lambda node: previous.copy() if isinstance(node, exp.Column) and node.name == BLOCK_X else node)


def block_hash_layers(unit: exp.Expr, unit_type: str) -> list[exp.Expr]:
    """block_hash as successive projections: the first reads the unit, each later one the column
    BLOCK_X holding the previous one. Nested as subqueries, every step and every coefficient
    appears once in the SQL (inlined into one expression, the xor-shifts double the text at each
    round and the engine parses and folds every copy of the coefficients)."""
    seed = exp.Placeholder(this=MODE_SEED)
    if unit_type != "int":
        return [HashBits(this=seed, expressions=[hash_input(unit, unit_type)])]
    mask = exp.Literal.number(BLOCK_MASK)

    def coefficient(index: int, odd: bool = False) -> exp.Expr:
        bits = exp.paren(exp.BitwiseAnd(this=HashBits(this=seed.copy(), expressions=[exp.Literal.number(index)]), expression=mask.copy()))
        return exp.paren(exp.BitwiseOr(this=bits, expression=exp.Literal.number(1))) if odd else bits

    def shifted(x: exp.Expr, shift: int) -> exp.Expr:
        return exp.paren(exp.BitwiseRightShift(this=exp.paren(x), expression=exp.Literal.number(shift)))

    def xor(x: exp.Expr, y: exp.Expr) -> exp.Expr:
        # Parenthesised whole: Spark renders ^ and & as operators, which bind looser than * and %.
        return exp.paren(exp.BitwiseXor(this=exp.paren(x), expression=y))

    def product(x: exp.Expr, k: int, a: int) -> exp.Expr:  # ((x ^ k) * a) & M
        return exp.paren(exp.BitwiseAnd(this=exp.paren(exp.Mul(this=xor(x, coefficient(k)), expression=coefficient(a, odd=True))),
                                        expression=mask.copy()))

    def column() -> exp.Expr:
        return exp.column(BLOCK_X)

    folded = exp.paren(exp.BitwiseAnd(this=xor(xor(unit, shifted(unit.copy(), 31)), shifted(unit.copy(), 62)), expression=mask.copy()))
    return [
        product(folded, 1, 2),
        product(xor(column(), shifted(column(), 16)), 3, 4),
        xor(column(), shifted(column(), 15)),
    ]


def mode_select(plan: Plan, request: ModeRequest, relation: str) -> exp.Select:
    """Votes per value and group: subsample modes of a keyed-hash partition of the persons.

    Person u goes to subsample block_hash(u) % B (all their rows, T = 1). In each
    (group, subsample) the most frequent value wins; ties go to the smallest keyed hash of
    (value, subsample) under $tie_seed, then to the smallest value, so every engine picks the same.
    Three aggregations, no window: counts per (group, subsample, value), the mode per (group,
    subsample) by ARG_MIN over (-count, tie hash, value), then the votes per (group, value).
    """
    names = _key_names(plan)
    column = request.column
    if request.counts:  # each declared value's (report-noisy-max) or each present value's (histogram) rows per group
        value = exp.column(column.name, quoted=True)
        declared = (exp.In(this=value.copy(), expressions=[exp.convert(v) for v in column.values]) if column.values
                    else _present(column, keep_infinite=True))
        condition = row_filter(plan)
        return (exp.select(*_keys(plan), exp.alias_(value, MODE), exp.alias_(exp.Count(this=exp.Star()), VOTES))
                .from_(exp.to_identifier(relation, quoted=True))
                .where(exp.and_(condition, declared) if condition is not None else declared)
                .group_by(*[key_sql(k) for k in plan.query.keys], value.copy()))
    unit = exp.column(plan.bounding.unit, quoted=True)
    layers = block_hash_layers(unit, plan.query.table.columns[plan.bounding.unit].type)
    condition = row_filter(plan)
    present = _present(column, keep_infinite=True)
    # Each block_hash layer once per row, in nested subqueries; the block is grouped by name.
    blocked = (exp.select(*_keys(plan), exp.alias_(exp.column(column.name, quoted=True), VALUE), exp.alias_(layers[0], BLOCK_X))
               .from_(exp.to_identifier(relation, quoted=True))
               .where(exp.and_(condition, present) if condition is not None else present))
    for i, layer in enumerate(layers[1:]):
        blocked = exp.select(*names, VALUE, exp.alias_(layer, BLOCK_X)).from_(blocked.subquery(f"__h{i}"))
    subsample = exp.Mod(this=exp.column(BLOCK_X), expression=exp.Literal.number(request.blocks))
    counts = (exp.select(*names, exp.alias_(subsample, "__sid"), VALUE, exp.alias_(exp.Count(this=exp.Star()), COUNT))
              .from_(blocked.subquery("__s")).group_by(*names, subsample.copy(), VALUE))
    tie = KeyedHash(this=exp.Placeholder(this=TIE_SEED), expressions=[hash_input(exp.column(VALUE), column.type), exp.column("__sid")])
    # The subsample's mode: the value first in (count descending, tie hash, value), as one
    # aggregate (a row_number window over the counts cost as much as the block assignment).
    # Tuples compare field by field on both engines; none of the fields is NULL.
    first = exp.Struct(expressions=[exp.Neg(this=exp.column(COUNT)), tie, exp.column(VALUE)])
    modes = (exp.select(*names, exp.alias_(exp.ArgMin(this=exp.column(VALUE), expression=first), MODE))
             .from_(counts.subquery("__c")).group_by(*names, "__sid"))
    return (exp.select(*names, MODE, exp.alias_(exp.Count(this=exp.Star()), VOTES))
            .from_(modes.subquery("__m")).group_by(*names, MODE))


# --- reading ---------------------------------------------------------------------------------------

Rows = tuple[tuple[str, ...], list[tuple[Any, ...]]]  # a statement's column names and rows
Step = tuple[exp.Select, Mapping[str, Any]]  # one engine statement over the bounded relation, and its parameters
Reads = Generator[Step, Rows, dict[GroupKey, Any]]


def reads(query: RobustQuery, plan: Plan, params: Mapping[str, Any] | None = None) -> Reads:
    """The engine statements of one raw request, one at a time (sans-IO): each is yielded with its
    parameters, and the caller (execution/executor.py, the only caller of the engine) sends back
    its rows; which statement comes next may depend on them (a bracket, bucket ranges, a fallback).
    Returns group key -> OrderStatistics (rank requests) or {value: votes} (MODE), exactly."""
    nkeys = len(plan.query.keys)
    names, rows = yield query.main, dict(params or {})
    request = query.request
    if isinstance(request, ModeRequest):
        votes: dict[GroupKey, dict[Hashable, int]] = {}
        for row in rows:
            votes.setdefault(tuple(row[:nkeys]), {})[row[nkeys]] = int(row[nkeys + 1])
        return votes
    if request.histogram:
        pairs: dict[GroupKey, list[tuple[Any, int]]] = {}
        for row in rows:
            pairs.setdefault(tuple(row[:nkeys]), []).append((row[nkeys], int(row[nkeys + 1])))
        return {key: clamp(request.values, Histogram.from_counts(values)) for key, values in pairs.items()}
    if query.exact:
        return {key: clamp(request.values, stats) for key, stats in _exact_windows(rows, nkeys).items()}
    if query.width is not None:  # ungrouped two-stage: buckets, then the values of the windows' buckets
        assert query.scan is not None
        n, buckets = bucket_windows(request, query.width, [(row[0], row[1]) for row in rows])
        if not n:
            return {}
        _, ranged = yield query.scan, _range_params(request, buckets)
        counted = counted_windows(n, buckets, ranged)
        if counted is not None:
            return {(): counted}  # clamped in the engine
        assert query.fallback is not None
        _, exact = yield query.fallback, {}
        return {key: clamp(request.values, stats) for key, stats in _exact_windows(exact, nkeys).items()}
    if query.scan is not None:  # ungrouped: bracket from the sample, then one scan with it bound
        n, sample = (int(rows[0][0]), rows[0][1]) if rows else (0, None)
        _, scanned = yield query.scan, _brackets(plan, request, n, sample)
        rows = [(n, *scanned[0])] if n else []
    windows = _windows(request, rows, nkeys)
    if windows is None:
        assert query.fallback is not None
        _, exact = yield query.fallback, {}
        windows = _exact_windows(exact, nkeys)
    return {key: clamp(request.values, stats) for key, stats in windows.items()}


def _windows(request: RankRequest, rows: list[tuple[Any, ...]], nkeys: int) -> dict[GroupKey, OrderStatistics] | None:
    out: dict[GroupKey, OrderStatistics] = {}
    for row in rows:
        n = int(row[nkeys])
        parts = []
        for i, (p, reach) in enumerate(request.windows):
            below, size, first, values = row[nkeys + 1 + 4 * i: nkeys + 1 + 4 * (i + 1)]
            below, size = int(below), int(size or 0)
            rho = quantile_rank(n, p)
            if below + 1 > max(1, rho - reach) or below + size < min(n, rho + reach):
                return None  # the bracket missed some needed rank: read exact ranks instead
            parts.append((int(first), tuple(values or ())))
        out[tuple(row[:nkeys])] = WindowedOrderStatistics(n, tuple(parts))
    return out


def _exact_windows(rows: list[tuple[Any, ...]], nkeys: int) -> dict[GroupKey, OrderStatistics]:
    ranked: dict[GroupKey, tuple[int, dict[int, Any]]] = {}
    for row in rows:
        key = tuple(row[:nkeys])
        n, rank, value = int(row[nkeys]), int(row[nkeys + 1]), row[nkeys + 2]
        ranked.setdefault(key, (n, {}))[1][rank] = value
    out: dict[GroupKey, OrderStatistics] = {}
    for key, (n, by_rank) in ranked.items():
        runs: list[tuple[int, list[Any]]] = []
        for rank in sorted(by_rank):
            if runs and runs[-1][0] + len(runs[-1][1]) == rank:
                runs[-1][1].append(by_rank[rank])
            else:
                runs.append((rank, [by_rank[rank]]))
        out[key] = WindowedOrderStatistics(n, tuple((first, tuple(values)) for first, values in runs))
    return out


def clamp(values: ValueMap, stats: Any) -> Any:
    """Order statistics of the values clamped to the public bounds (raw value maps only).

    Clamping is monotone, so clamp(x)_(j) = clamp(x_(j)): the engine ranks raw values and only
    the few that come back are clamped. Grid indices are already clamped in the engine.
    """
    if values.indexed or values.lower is None or values.upper is None:
        return stats
    low: int | float
    high: int | float
    if values.column.type in ("int", "date"):
        low, high = int(values.lower), int(values.upper)
    else:
        low, high = float(values.lower), float(values.upper)

    def cut(value: Any) -> Any:
        return low if value < low else high if value > high else value

    if isinstance(stats, Histogram):
        return Histogram.from_counts([(cut(v), stats.count(i)) for i, v in enumerate(stats.values)])
    return WindowedOrderStatistics(stats.n, tuple((first, tuple(cut(v) for v in part)) for first, part in stats.windows))


def decode(values: ValueMap | None, mapped: Any) -> Any:
    """A released mapped value back in the column's units (grid index * grid; ordinal -> date)."""
    if values is None:
        return mapped
    value: Any = mapped
    if values.indexed:
        assert values.grid is not None
        exact = Fraction(mapped) * values.grid
        value = int(exact) if exact.denominator == 1 and values.column.type in ("int", "date") else float(exact)
    if values.column.type == "date":
        return date.fromordinal(min(max(int(round(value)), 1), date.max.toordinal()))
    return value
