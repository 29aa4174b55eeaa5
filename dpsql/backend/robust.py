"""Engine SQL (sqlglot expressions only) and fetching for the robust aggregates' raw requests.

Every request reads the session's bounded relation with the Laplace query's row filter (the
analyst's WHERE inside TRY, public key domains) and group keys, maps the column per row
(ir.plan.ValueMap: drop NULL/NaN/+-inf, dates to ordinals, clamp to public bounds, grid index),
and computes, per group, exactly what the mechanism reads:

- histogram (the mapped column has at most 2^16 possible values, known from the policy):
  `SELECT keys, v, count(*) ... GROUP BY keys, v`: one scan.
- rank windows (otherwise): one statement. A first scan counts n per group and takes
  reservoir_quantile of v at a fixed ladder of quantiles p -+ 2^-j; SQL then picks, per group,
  the narrowest rung wide enough for +-(C + 1) s ranks plus 5 standard deviations of the sample
  quantile, and a second scan returns count_if(v < lo) and the sorted values in [lo, hi]. The
  bracket only decides how much is read: Python checks that the exact ranks rho_p(n) -+ reach
  are inside, and if a rare bracket misses, an exact window-function query (row_number per group)
  is run instead. Either way the mechanism sees exact order statistics.
- MODE: one statement. Each person goes to subsample hash(unit, $mode_seed) % B (so all their
  rows go there, T = 1); per (group, subsample) the most frequent value wins, ties broken by
  hash(value, subsample, $tie_seed); per group, the votes each value got. Empty subsamples are
  absent, i.e. abstain. No Python loop over rows.
Seeds are fresh secret per-query parameters, drawn by the session after the charge.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from typing import Any, Callable, Hashable, Mapping

from sqlglot import exp

from dpsql.backend.sqlgen import number, row_filter
from dpsql.catalog.model import Column
from dpsql.ir.plan import ModeRequest, Plan, RankRequest, ValueMap
from dpsql.ir.query import key_name
from dpsql.mechanisms.ranks import Histogram, OrderStatistics, WindowedOrderStatistics, quantile_rank

GroupKey = tuple[Any, ...]
RESERVOIR_UNGROUPED = 65536
RESERVOIR_GROUPED = 4096
LADDER = tuple(Fraction(1, 2**j) for j in range(1, 17))  # quantile half-widths 1/2 .. 2^-16
SIGMAS = 5
MODE_SEED, TIE_SEED = "mode_seed", "tie_seed"
VALUE, COUNT, N, BELOW, WINDOW, RANK, VOTES, MODE = "__v", "__c", "__n", "__below", "__win", "__rk", "__votes", "__mode"


@dataclass(frozen=True)
class RobustQuery:
    """The engine SQL of one raw request: the statement to run, and the exact fallback (windows)."""

    request: RankRequest | ModeRequest
    main: exp.Select
    fallback: exp.Select | None = None

    @property
    def seeded(self) -> bool:
        """Whether the statement takes the $mode_seed and $tie_seed parameters."""
        return isinstance(self.request, ModeRequest)


def robust_queries(plan: Plan, relation: str) -> tuple[RobustQuery, ...]:
    """One RobustQuery per request of the plan, reading `relation` (bounded, or empty for dry runs)."""
    out = []
    for request in plan.requests:
        if isinstance(request, ModeRequest):
            out.append(RobustQuery(request, mode_select(plan, request, relation)))
        elif request.histogram:
            out.append(RobustQuery(request, histogram_select(plan, request, relation)))
        else:
            out.append(RobustQuery(request, window_select(plan, request, relation), exact_window_select(plan, request, relation)))
    return tuple(out)


# --- value maps and the base relation ------------------------------------------------------------


def value_expr(values: ValueMap) -> exp.Expr:
    """The per-row mapped value: date -> ordinal, clamp to public bounds, grid index."""
    column = exp.column(values.column.name, quoted=True)
    value: exp.Expr = column
    if values.column.type == "date":
        days = exp.Sub(this=column, expression=exp.cast(exp.Literal.string("0001-01-01"), "DATE"))
        value = exp.Add(this=exp.cast(days, "BIGINT"), expression=exp.Literal.number(1))
    if values.lower is not None and values.upper is not None:
        value = exp.func("least", exp.func("greatest", value, number(values.lower)), number(values.upper))
    if values.grid is None or (values.grid == 1 and values.column.type in ("int", "date")):
        return value
    index: exp.Expr = exp.cast(exp.func("round", exp.Div(this=value, expression=number(values.grid))), "BIGINT")
    span = values.index_range
    if span is not None:
        index = exp.func("least", exp.func("greatest", index, exp.Literal.number(span[0])), exp.Literal.number(span[1]))
    return index


def _present(column: Column, keep_infinite: bool = False) -> exp.Expr:
    name = exp.column(column.name, quoted=True)
    if column.type == "float":
        if keep_infinite:
            return exp.and_(exp.Not(this=exp.Is(this=name, expression=exp.Null())), exp.Not(this=exp.func("isnan", name.copy())))
        return exp.func("isfinite", name)  # NULL for NULL, so the row drops
    return exp.Not(this=exp.Is(this=name, expression=exp.Null()))


def _keys(plan: Plan) -> list[exp.Expr]:
    return [exp.alias_(exp.column(k.column.name, quoted=True), key_name(i)) for i, k in enumerate(plan.query.keys)]


def _key_names(plan: Plan) -> list[str]:
    return [key_name(i) for i in range(len(plan.query.keys))]


def base_select(plan: Plan, values: ValueMap, relation: str) -> exp.Select:
    """Keys and the mapped value of every row that passes the query's filter and has a value."""
    condition = row_filter(plan)
    present = _present(values.column)
    where = exp.and_(condition, present) if condition is not None else present
    return exp.select(*_keys(plan), exp.alias_(value_expr(values), VALUE)).from_(exp.to_identifier(relation, quoted=True)).where(where)


# --- histogram path ------------------------------------------------------------------------------


def histogram_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """Per group and mapped value, the number of rows."""
    names = _key_names(plan)
    return (
        exp.select(*names, VALUE, exp.alias_(exp.Count(this=exp.Star()), COUNT))
        .from_(base_select(plan, request.values, relation).subquery("__b"))
        .group_by(*names, VALUE)
    )


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


def window_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """n, and per window count(v < lo) and the sorted v in [lo, hi], per group (one statement)."""
    names = _key_names(plan)
    quantiles, position = _ladder(request)
    base = base_select(plan, request.values, relation)
    sample = exp.select(
        *_columns(*names), _as(exp.Count(this=exp.Star()), N),
        _as(exp.Anonymous(this="reservoir_quantile", expressions=[
            exp.column(VALUE), exp.Array(expressions=[number(q) for q in quantiles]), exp.Literal.number(_reservoir(plan))]), "__q"),
        copy=False).from_(_table("__b"), copy=False)
    if names:
        sample = sample.group_by(*_columns(*names), copy=False)
    needs = [_as(_need(plan, p, reach), f"__need{i}") for i, (p, reach) in enumerate(request.windows)]
    brackets = [_as(_bracket(request, i, side, position), f"__{side}{i}")
                for i in range(len(request.windows)) for side in ("lo", "hi")]
    inner = exp.select(*_columns(*names, N, "__q"), *needs, copy=False).from_(_table("__s"), copy=False).subquery("__nd", copy=False)
    bracket = exp.select(*_columns(*names, N), *brackets, copy=False).from_(inner, copy=False)
    value = exp.column(VALUE, "__b")
    columns: list[exp.Expr] = [*[exp.column(n, "__br") for n in names], exp.column(N, "__br")]
    for i in range(len(request.windows)):
        lo, hi = exp.column(f"__lo{i}", "__br"), exp.column(f"__hi{i}", "__br")
        inside = exp.and_(
            exp.or_(exp.Is(this=lo.copy(), expression=exp.Null()), exp.GTE(this=value.copy(), expression=lo.copy())),
            exp.or_(exp.Is(this=hi.copy(), expression=exp.Null()), exp.LTE(this=value.copy(), expression=hi.copy())),
        )
        below = exp.func("coalesce", exp.func("count_if", exp.LT(this=value.copy(), expression=lo.copy())), exp.Literal.number(0))
        columns.append(_as(below, f"{BELOW}{i}"))
        ordered = exp.ArrayAgg(this=exp.Order(this=value.copy(), expressions=[exp.Ordered(this=value.copy())]))
        columns.append(_as(exp.Filter(this=ordered, expression=exp.Where(this=inside)), f"{WINDOW}{i}"))
    scan = exp.select(*columns, copy=False).from_(_table("__b"), copy=False)
    if names:
        on = exp.and_(*[exp.NullSafeEQ(this=exp.column(n, "__b"), expression=exp.column(n, "__br")) for n in names])
        scan = scan.join(_table("__br"), on=on, copy=False)
    else:
        scan = scan.join(_table("__br"), join_type="CROSS", copy=False)
    scan = scan.group_by(*[exp.column(n, "__br") for n in names], exp.column(N, "__br"), copy=False)
    return scan.with_("__b", as_=base, copy=False).with_("__s", as_=sample, copy=False).with_("__br", as_=bracket, copy=False)


def exact_window_select(plan: Plan, request: RankRequest, relation: str) -> exp.Select:
    """The windows by exact ranks (row_number per group): the fallback when a bracket misses."""
    names = _key_names(plan)
    value = exp.column(VALUE)
    partition = [exp.column(n) for n in names]
    order = exp.Order(expressions=[exp.Ordered(this=value.copy())])
    ranked = exp.select(*names, VALUE,
                        exp.alias_(exp.Window(this=exp.RowNumber(), partition_by=partition, order=order), RANK),
                        exp.alias_(exp.Window(this=exp.Count(this=exp.Star()), partition_by=[p.copy() for p in partition]), N)
                        ).from_(base_select(plan, request.values, relation).subquery("__b"))
    conditions = []
    for p, reach in request.windows:
        rho = exp.func("greatest", exp.Literal.number(1), exp.IntDiv(
            this=exp.paren(exp.Add(this=exp.Mul(this=exp.column(N), expression=exp.Literal.number(p.numerator)),
                                   expression=exp.Literal.number(p.denominator - 1))),
            expression=exp.Literal.number(p.denominator)))
        conditions.append(exp.Between(this=exp.column(RANK), low=exp.Sub(this=rho, expression=exp.Literal.number(reach)),
                                      high=exp.Add(this=rho.copy(), expression=exp.Literal.number(reach))))
    return exp.select(*names, N, RANK, VALUE).from_(ranked.subquery("__r")).where(exp.or_(*conditions))


# --- MODE ------------------------------------------------------------------------------------------


def mode_select(plan: Plan, request: ModeRequest, relation: str) -> exp.Select:
    """Votes per value and group: subsample modes of a keyed-hash partition of the persons."""
    names = _key_names(plan)
    column = request.column
    unit = exp.column(plan.bounding.unit, quoted=True)
    subsample = exp.cast(exp.Mod(this=exp.func("hash", unit, exp.Placeholder(this=MODE_SEED)),
                                 expression=exp.Literal.number(request.blocks)), "BIGINT")
    condition = row_filter(plan)
    present = _present(column, keep_infinite=True)
    counts = (
        exp.select(*_keys(plan), exp.alias_(subsample, "__sid"), exp.alias_(exp.column(column.name, quoted=True), VALUE),
                   exp.alias_(exp.Count(this=exp.Star()), COUNT))
        .from_(exp.to_identifier(relation, quoted=True))
        .where(exp.and_(condition, present) if condition is not None else present)
        .group_by(*[exp.column(k.column.name, quoted=True) for k in plan.query.keys], subsample.copy(), exp.column(column.name, quoted=True))
    )
    tie = exp.cast(exp.Mod(this=exp.func("hash", exp.column(VALUE), exp.column("__sid"), exp.Placeholder(this=TIE_SEED)),
                           expression=exp.Literal.number(2**32)), "BIGINT")
    key = exp.Add(this=exp.Mul(this=exp.cast(exp.column(COUNT), "BIGINT"), expression=exp.Literal.number(2**32)), expression=tie)
    modes = (exp.select(*names, "__sid", exp.alias_(exp.func("arg_max", exp.column(VALUE), key), MODE))
             .from_(counts.subquery("__c")).group_by(*names, "__sid"))
    return (exp.select(*names, MODE, exp.alias_(exp.Count(this=exp.Star()), VOTES))
            .from_(modes.subquery("__m")).group_by(*names, MODE))


# --- fetching --------------------------------------------------------------------------------------

Runner = Callable[[exp.Select, Mapping[str, Any]], tuple[tuple[str, ...], list[tuple[Any, ...]]]]


def fetch(query: RobustQuery, plan: Plan, run: Runner, params: Mapping[str, Any] | None = None) -> dict[GroupKey, Any]:
    """Group key -> OrderStatistics (rank requests) or {value: votes} (MODE), exactly."""
    nkeys = len(plan.query.keys)
    names, rows = run(query.main, params or {})
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
        return {key: Histogram.from_counts(values) for key, values in pairs.items()}
    windows = _windows(request, rows, nkeys)
    if windows is None:
        assert query.fallback is not None
        _, exact = run(query.fallback, {})
        windows = _exact_windows(exact, nkeys)
    return windows


def _windows(request: RankRequest, rows: list[tuple[Any, ...]], nkeys: int) -> dict[GroupKey, OrderStatistics] | None:
    out: dict[GroupKey, OrderStatistics] = {}
    for row in rows:
        n = int(row[nkeys])
        parts = []
        for i, (p, reach) in enumerate(request.windows):
            below, values = int(row[nkeys + 1 + 2 * i]), tuple(row[nkeys + 2 + 2 * i] or ())
            rho = quantile_rank(n, p)
            if below + 1 > max(1, rho - reach) or below + len(values) < min(n, rho + reach):
                return None  # the bracket missed some needed rank: read exact ranks instead
            parts.append((below + 1, values))
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


def decode(values: ValueMap | None, mapped: Any) -> Any:
    """A released mapped value back in the column's units (grid index * grid; ordinal -> date)."""
    if values is None:
        return mapped
    value: Any = mapped
    if values.grid is not None and not (values.grid == 1 and values.column.type in ("int", "date")):
        exact = Fraction(mapped) * values.grid
        value = int(exact) if exact.denominator == 1 and values.column.type in ("int", "date") else float(exact)
    if values.column.type == "date":
        return date.fromordinal(min(max(int(round(value)), 1), date.max.toordinal()))
    return value
