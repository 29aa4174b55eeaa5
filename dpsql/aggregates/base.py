"""The Aggregate protocol, and what binding and planning offer an aggregate module.

An aggregate is found by its SQL spelling when a query is bound (`classes`, `names`) and by
`AggregateCall.kind` when it is planned (registry.py). Planning has two phases, because the
query's epsilon is split equally over every *distinct* Laplace release (two aggregates may share
one, as AVG and STDDEV of a column share its count and centred sum) and every robust aggregate:

1. `needs(call, query, bounding)`: pure, from the policy and the query: the Laplace releases the
   aggregate reads (an exact raw aggregate and its sensitivity), whether it takes a share of
   epsilon of its own (robust aggregates) and spends delta from it, and its EXPLAIN notes;
2. `plan(call, index, planning, share)`: once the budget is split, its Estimate (ir.plan), with
   any engine request or robust release it adds through `planning` (aggregates/planning.py).

The Estimate is the one definition of the aggregate's value, interval, type and noise facts;
`LaplaceEstimate` and `RobustEstimate` below give the shared parts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from sqlglot import exp

from dpsql.accounting.cost import to_fraction
from dpsql.catalog.policy import Column, Table
from dpsql.errors import Error
from dpsql.ir.plan import (
    Bounding,
    Cell,
    Plan,
    RawAggregate,
    RobustRelease,
    release_name,
    release_width,
    robust_ci_name,
    robust_confidence_name,
    robust_end_names,
    robust_name,
)
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms import registry
from dpsql.mechanisms.base import fmt

EXAMPLE_ROWS = (100, 1_000, 10_000)  # the group sizes EXPLAIN's expected intervals are shown for


def function_name(node: exp.Expr) -> str:
    """The lower-case SQL name of a function node."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.UnixToTime):
        return "to_timestamp"  # sqlglot's name for it is unix_to_time, which nobody writes
    return node.sql_name().lower() if isinstance(node, exp.Func) else type(node).__name__.lower()


def number_literal(node: exp.Expr | None) -> Fraction | None:
    """The exact value of a number literal, else None."""
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return to_fraction(node.this)
        except (ValueError, ZeroDivisionError):
            return None
    return None


def within_group_argument(node: exp.WithinGroup, binder: Binder) -> exp.Expr:
    """The column of `agg(...) WITHIN GROUP (ORDER BY col)` (one column, ascending: DP124 otherwise)."""
    order = node.expression
    items = order.expressions if isinstance(order, exp.Order) else []
    if len(items) != 1 or items[0].args.get("desc"):
        raise binder.refuse("DP124", f"{function_name(node.this).upper()} WITHIN GROUP needs ORDER BY one column, ascending",
                            node, "write PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY income)")
    column: exp.Expr = items[0].this
    return column


def grid_units(bound: Fraction, grid: Fraction, rounding: Callable[[Fraction], int]) -> int:
    """A bound in grid units, rounded inwards by the caller's `rounding` (math.ceil for a lower
    bound, math.floor for an upper one): clamp bounds on the grid lie inside the declared bounds,
    so sensitivities stay as declared."""
    return int(rounding(bound / grid))


class Binder(Protocol):
    """What binding offers an aggregate module (analysis/bind.py implements it)."""

    @property
    def table(self) -> Table:
        """The private table the query reads."""
        ...

    @property
    def quantile_mechanism(self) -> str | None:
        """OPTIONS (quantile_mechanism = ...), normalised, or None."""
        ...

    @property
    def median_bound(self) -> Fraction | None:
        """OPTIONS (median_bound = b), or None."""
        ...

    def refuse(self, code: str, message: str, node: exp.Expr, hint: str) -> Error:
        """A refusal with a caret under `node` (raise it)."""
        ...

    def invalid_option(self, message: str, node: exp.Expr, hint: str) -> Error:
        """A DP120 option error with a caret under `node` (raise it)."""
        ...

    def column(self, arg: exp.Expr | None, node: exp.Expr) -> Column:
        """`arg` as a plain column of the policy (DP115/DP116 otherwise)."""
        ...

    def per_row(self, label: str, arg: exp.Expr) -> Column:
        """The derived column of a per-row expression, with the bounds the analysis derives from
        the policy (DP115 naming `label` when it cannot)."""
        ...


@dataclass(frozen=True, slots=True)
class Needs:
    """What one aggregate asks of the budget split (phase 1, public): its Laplace releases (raw
    aggregate and sensitivity from the policy, in order), whether it takes an equal share of
    epsilon of its own and spends delta from it, whether the query must keep Laplace noise for
    it, and its notes for EXPLAIN."""

    releases: tuple[tuple[RawAggregate, Fraction], ...] = ()
    share: bool = False
    delta: bool = False
    laplace_only: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Share:
    """The (epsilon, delta) an aggregate with a share of its own spends (phase 2)."""

    epsilon: Fraction
    delta: Fraction


class Planning(Protocol):
    """The plan being built, as phase 2 sees it (aggregates/planning.py implements it)."""

    @property
    def query(self) -> BoundQuery: ...

    @property
    def bounding(self) -> Bounding: ...

    @property
    def groups(self) -> int:
        """G: how many groups one person's rows can fall in."""
        ...

    def release(self, raw: RawAggregate) -> int:
        """The index of the Laplace release of `raw` (one the aggregate needed in phase 1)."""
        ...

    def spec(self, index: int) -> Any:
        """The noise spec of Laplace release `index`."""
        ...

    def unit(self, index: int) -> Fraction:
        """The value of one unit of Laplace release `index`."""
        ...

    def add_release(self, raw: RawAggregate, spec: Any) -> int:
        """A Laplace release paid from the aggregate's own share (IQR's n_hat); its index."""
        ...

    def reusable_count(self, column: str) -> int | None:
        """A count release of the query a robust aggregate may reuse (COUNT(*), or of `column`)."""
        ...

    def rank_request(self, values: Any, windows: Mapping[Fraction, int]) -> int:
        """The engine request for order statistics of a mapped column (windows merged per column)."""
        ...

    def mode_request(self, request: Any) -> int:
        """An engine request of per-value counts or subsample votes."""
        ...

    def robust(self, release: RobustRelease) -> int:
        """Add a robust release to the plan; its index (Plan.robust)."""
        ...

    def note(self, text: str) -> None:
        """An EXPLAIN note on a public choice (once per distinct text)."""
        ...


class Aggregate(Protocol):
    """One family of aggregates: its spellings, argument checks, planning and estimates."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The AggregateCall kinds it binds and plans."""
        ...

    @property
    def classes(self) -> tuple[type[exp.Expr], ...]:
        """The sqlglot call nodes it binds (COUNT, SUM, ...; a WITHIN GROUP or FILTER around them too)."""
        ...

    @property
    def names(self) -> tuple[str, ...]:
        """The function names it binds that sqlglot keeps as anonymous calls (IQR, TRIMMED_MEAN)."""
        ...

    @property
    def filterable(self) -> bool:
        """Whether `agg(...) FILTER (WHERE c)` is accepted (as the aggregate of CASE WHEN c THEN ... END)."""
        ...

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:
        """The call `node` (its text as written: `text`), with its arguments checked."""
        ...

    def accuracy_first(self, call: AggregateCall) -> str | None:
        """None when OPTIONS (ci95 = h) can size its epsilon (its half-width is a public function
        of epsilon); else why not, for the refusal (DP145)."""
        ...

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        """Whether it counts rows (a Median Mechanism layer's query), and of which column's non-NULL values."""
        ...

    def value_type(self, call: AggregateCall) -> str:
        """The DuckDB type its released value is read as before it is planned (a scalar
        subquery's value, a typed engine parameter: analysis/scalar_subqueries.py); numbers are DOUBLE."""
        ...

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        """Phase 1 of planning (module docstring)."""
        ...

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> Any:
        """Phase 2 of planning: its Estimate (an ir.plan.Estimate)."""
        ...


def over_expression(binder: Binder, kind: str, arg: exp.Expr, text: str) -> AggregateCall:
    """An aggregate of a per-row expression (SUM(1), AVG(income / 12), a FILTER as a CASE): a
    derived column named by the expression, with bounds from the policy (`Binder.per_row`)."""
    return AggregateCall(kind=kind, column=binder.per_row(kind.upper(), arg), text=text, expr=strip_qualifiers(arg))


def strip_qualifiers(node: exp.Expr) -> exp.Expr:
    """The expression with `t.col` written as `col` (one table: the names are unambiguous)."""
    def visit(sub: exp.Expr) -> exp.Expr:
        if isinstance(sub, exp.Column) and sub.table:
            return exp.column(sub.name)
        return sub

    return node.copy().transform(visit)


def per_rows(width: float) -> str:
    """A half-width over n shown for a few group sizes (EXPLAIN)."""
    return ", ".join(f"±{fmt(width / n)} at n = {n:,}" for n in EXAMPLE_ROWS)


def refusal_sentence(plan: Plan, release: RobustRelease, reason: str) -> str:
    """The ⊥ message: public facts only (the aggregate as written, the mechanism family, its cost)."""
    cost = registry.cost(release.spec)
    label = plan.query.aggregates[release.aggregate].label
    return f"{label} refused: {reason} Its budget (epsilon {float(cost.epsilon):.4g}, delta {float(cost.delta):.3g}) was spent."


class LaplaceEstimate:
    """The shared part of estimates computed from Laplace (or Gaussian) releases only: a
    subclass is a frozen dataclass with `releases` and defines `kind` and `value`."""

    __slots__ = ()
    kind: str
    releases: tuple[int, ...]
    robust: int | None = None
    corners = True
    doubles = False  # whether its values are DOUBLE even on unit releases (AVG, VARIANCE)
    additive = False  # its value over disjoint groups' union is the sum of theirs (COUNT, SUM)
    not_additive = ""  # why not, where a reader would expect it (EXPLAIN of reconciled totals)

    def value(self, released: Sequence[Any]) -> Any:
        raise NotImplementedError

    def possible(self) -> tuple[float | None, float | None]:
        """The range every true value lies in, from the policy alone (None: unbounded on that side)."""
        return None, None

    def cells(self, plan: Plan, columns: Mapping[str, Sequence[Any]], rows: int) -> list[Cell]:
        """The value and the corner evaluation: each of its m releases at its (1 - 0.05/m)
        interval (a union bound keeps the joint level at 95%), the value at every corner.
        Unless OPTIONS (clamp = false), the value is then clamped into the possible range, and
        the half-width kept: the true value lies in that range, and clamping (a projection onto
        it) never moves a value away from it, so the clamped value is within the half-width of
        the truth whenever the unclamped one was (coverage kept; never a misleading ±0).

        The interval's ends (`Cell.low`, `Cell.high`) are the corner evaluation's two sides kept
        around the released value, each end then clipped into the possible range: [v - hw, v + hw]
        intersected with that range for one release. Coverage stays >= 95%. Say the unclamped
        interval [v - below, v + above] holds the truth t (the 95% event). Clamping moves v towards
        the range, and t is in the range, so t - c lies between t - v and 0 (c: the clamped
        value): t is in [c - below, c + above] too. Clipping an end into a range holding t never
        moves it past t (a projection is monotone and leaves t where it is). The interval is never
        empty and holds c (c is in the range, between the ends before clipping), and it is never
        a misleading [c, c]: the side away from the clipped bound keeps its width."""
        released = [columns[release_name(r)] for r in self.releases]
        widths = [float(release_width(plan, r, len(self.releases))) for r in self.releases]
        signs = list(itertools.product((-1, 1), repeat=len(widths)))
        low, high = self.possible() if plan.query.clamp else (None, None)

        def clip(value: Any) -> Any:
            if low is not None and value < low:
                return type(value)(low)
            if high is not None and value > high:
                return type(value)(high)
            return value

        out = []
        for row in range(rows):
            values = [column[row] for column in released]
            value = self.value(values)
            corners = [self.value([v + s * w for v, s, w in zip(values, sign, widths)]) for sign in signs]
            below, above = float(max(value - min(corners), 0)), float(max(max(corners) - value, 0))
            kept = clip(value)
            out.append(Cell(kept, max(below, above), None, float(clip(float(kept) - below)), float(clip(float(kept) + above))))
        return out

    def output_type(self, plan: Plan) -> str:
        doubles = self.doubles or any(plan.releases[r].unit != 1 for r in self.releases)
        return "DOUBLE" if doubles else "BIGINT"

    def noise(self, plan: Plan) -> dict[str, Any]:
        releases = [plan.releases[r] for r in self.releases]
        noise = registry.name(releases[0].spec)  # one noise family per query
        single = len(releases) == 1
        scales = [float(r.spec.scale * r.unit) for r in releases]
        return {"mechanism": noise if single else f"{noise} ({self.kind}, post-processed)",
                "scale": scales[0] if single else tuple(scales),
                "ci95": float(release_width(plan, self.releases[0], 1)) if single else None,
                "epsilon": float(sum(r.spec.epsilon for r in releases)),
                "delta": float(sum(getattr(r.spec, "delta", 0) for r in releases))}

    def expected(self, plan: Plan) -> str:
        raise NotImplementedError

    def reads(self, release: RobustRelease, raw: Any, columns: Mapping[str, Sequence[Any]], row: int) -> Any:
        raise TypeError("a Laplace estimate has no robust release")

    def decode(self, released: Any) -> Cell:
        raise TypeError("a Laplace estimate has no robust release")


def width(plan: Plan, release: int, parts: int = 1) -> float:
    """A release's 95% half-width in value units at level 1 - 0.05/parts (EXPLAIN)."""
    return float(release_width(plan, release, parts))


def noise_family(plan: Plan, release: int) -> str:
    """The noise of a Laplace-family release as EXPLAIN names it."""
    return {"gaussian": "discrete Gaussian"}.get(registry.name(plan.releases[release].spec), "discrete Laplace")


class RobustEstimate:
    """The shared part of estimates read from one robust release (a subclass is a frozen
    dataclass with `robust`, and defines `kind`, `output_type` and `decode`)."""

    __slots__ = ()
    kind: str
    robust: int | None
    releases: tuple[int, ...] = ()
    corners = False
    additive = False
    not_additive = ""

    def possible(self) -> tuple[float | None, float | None]:
        """Its mechanism keeps the release within the column's bounds already (no corners)."""
        return None, None

    def value(self, released: Sequence[Any]) -> Any:
        raise TypeError("a robust estimate is read from its release's column")

    def cells(self, plan: Plan, columns: Mapping[str, Sequence[Any]], rows: int) -> list[Cell]:
        """Its released values (None for ⊥), with the per-row 95% interval its mechanism states, else
        the plan's (none for ⊥), and the per-row confidence its mechanism states (MODE)."""
        assert self.robust is not None
        values = columns[robust_name(self.robust)]
        widths = columns.get(robust_ci_name(self.robust))
        stated = self.noise(plan)["ci95"] if widths is None else None
        confidences = columns.get(robust_confidence_name(self.robust))
        lows, highs = (columns.get(name) for name in robust_end_names(self.robust))
        return [Cell(values[row], None if values[row] is None else widths[row] if widths is not None else stated,
                     confidences[row] if confidences is not None else None,
                     lows[row] if lows is not None else None, highs[row] if highs is not None else None)
                for row in range(rows)]

    def output_type(self, plan: Plan) -> str:
        raise NotImplementedError

    def stated_ci95(self, plan: Plan, ci95: float | None) -> float | None:
        """The 95% half-width stated for every cell, from the mechanism's (a module may refine it)."""
        return ci95

    def noise(self, plan: Plan) -> dict[str, Any]:
        assert self.robust is not None
        release = plan.robust[self.robust]
        cost = registry.cost(release.spec)
        error = registry.error(release.spec)
        details = dict(error.details)
        reason = registry.refusal(release.spec)
        if reason is not None:  # a stability test: the release can be ⊥
            details.update({"refusal": refusal_sentence(plan, release, reason), "refused": False})
        return {"mechanism": release.mechanism, "scale": error.scale, "ci95": self.stated_ci95(plan, error.ci95),
                "epsilon": float(cost.epsilon), "delta": float(cost.delta), **details}

    def expected(self, plan: Plan) -> str:
        assert self.robust is not None
        error = registry.error(plan.robust[self.robust].spec)
        details = dict(error.details)
        if "rank_error95" in details:
            return (f"within {details['rank_error95']} ranks of the true quantile with 95% probability "
                    "(the value error depends on the data)")
        if error.ci95 is not None:
            return f"±{fmt(error.ci95)} when released (it may answer NULL, ⊥, when the data are not stable enough)"
        return "depends on the data (a stability test releases the exact value or NULL, ⊥)"

    def reads(self, release: RobustRelease, raw: Any, columns: Mapping[str, Sequence[Any]], row: int) -> Any:
        return raw

    def decode(self, released: Any) -> Cell:
        raise NotImplementedError
