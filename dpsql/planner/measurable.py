"""Which counting queries the Median Mechanism layer answers: measurability over X.

A query is measurable when its answer is a function of the histogram of the table over X (the
layer's view: each enabled column clamped into its declared domain, docs/mechanisms.md):

* exactly one aggregate, COUNT(*) or COUNT(col) of an enabled column;
* GROUP BY keys are enabled columns with declared values (all key combinations released);
* the WHERE predicate reads enabled columns only; a binned column appears only in comparisons
  with numeric literals that do not cut through a bin (`age >= 30` with an edge at 30), since
  the layer knows a row's bin, not its value;
* HAVING, ORDER BY, LIMIT and arithmetic in the select list are post-processing of the released
  vector and are allowed.

Anything else takes the ordinary per-query path; `measurable` says why, for EXPLAIN. The check
depends on the query and the policy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from dpsql.aggregates import registry as aggregates
from dpsql.catalog.policy import MedianMechanismConfig, MMColumnDomain
from dpsql.ir.query import BoundQuery

_FLIP = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE, exp.EQ: exp.EQ, exp.NEQ: exp.NEQ}
COMPARISONS = tuple(_FLIP)


@dataclass(frozen=True)
class MMQuery:
    """A measurable counting query: predicate over X, COUNT(col)'s column, group key columns."""

    predicate: exp.Expr | None
    not_null: str | None
    keys: tuple[str, ...]

    @property
    def text(self) -> str:
        """A normalised text of the query over X (the mask cache key)."""
        where = self.predicate.sql(dialect="duckdb") if self.predicate is not None else ""
        return f"{where}\x00{self.not_null or ''}\x00{','.join(self.keys)}"


def measurable(query: BoundQuery, config: MedianMechanismConfig) -> MMQuery | str:
    """The query over X, or the reason (public) why the layer does not take it."""
    enabled = set(config.columns)
    if len(query.aggregates) != 1:
        return "the layer answers one COUNT per query"
    call = query.aggregates[0]
    counts, not_null = aggregates.for_call(call).row_count(call)
    if not counts:
        return f"{call.text} is not a counting query"
    if not_null is not None and not_null not in enabled:
        return f"COUNT({not_null}): '{not_null}' is not a column of the layer"
    keys = []
    for key in query.keys:
        name = key.column.name
        domain = config.domain(name)
        if domain is None:
            return f"GROUP BY {name}: '{name}' is not a column of the layer"
        if domain.kind != "values" or key.column.values is None:
            return f"GROUP BY {name}: the layer groups by columns with declared values only"
        keys.append(name)
    if query.where is not None:
        reason = _predicate_reason(query.where, config)
        if reason is not None:
            return reason
    return MMQuery(_normalised(query.where), not_null, tuple(keys))


def _normalised(predicate: exp.Expr | None) -> exp.Expr | None:
    """Column names lower-cased (DuckDB identifiers are case-insensitive; policy names are lower)."""
    if predicate is None:
        return None
    return predicate.transform(lambda node: exp.column(node.name.lower()) if isinstance(node, exp.Column) else node)


def _predicate_reason(predicate: exp.Expr, config: MedianMechanismConfig) -> str | None:
    for column in predicate.find_all(exp.Column):
        domain = config.domain(column.name)
        if domain is None:
            return f"the predicate reads '{column.name}', which is not a column of the layer"
        if domain.kind == "bins" and not _aligned_use(column, domain):
            return (f"the predicate uses '{column.name}' in a way that cuts through its bins "
                    f"(edges {', '.join(_fmt(e) for e in domain.edges)})")
    return None


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _number(node: exp.Expr | None) -> Fraction | None:
    """The exact value of a numeric literal (possibly negated), else None."""
    inner = node.this if isinstance(node, exp.Neg) else node
    negative = inner is not node
    if not isinstance(inner, exp.Literal) or inner.is_string:
        return None
    try:
        value = Fraction(inner.this)
    except (ValueError, ZeroDivisionError):
        return None
    return -value if negative else value


def _aligned_use(column: exp.Column, domain: MMColumnDomain) -> bool:
    parent = column.parent
    if isinstance(parent, exp.Is) and parent.this is column and isinstance(parent.expression, exp.Null):
        return True
    if isinstance(parent, COMPARISONS):
        if parent.this is column:
            op, value = type(parent), _number(parent.expression)
        elif parent.expression is column:
            op, value = _FLIP[type(parent)], _number(parent.this)
        else:
            return False
        return value is not None and _constant_on_bins(op, value, domain)
    if isinstance(parent, exp.Between) and parent.this is column:
        low, high = _number(parent.args.get("low")), _number(parent.args.get("high"))
        return (low is not None and high is not None and _constant_on_bins(exp.GTE, low, domain)
                and _constant_on_bins(exp.LTE, high, domain))
    if isinstance(parent, exp.In) and parent.this is column and not parent.args.get("query"):
        values = [_number(v) for v in parent.expressions]
        return bool(values) and all(v is not None and _constant_on_bins(exp.EQ, v, domain) for v in values)
    return False


def _holds(op: type, v: Fraction, value: Fraction) -> bool:
    truth: dict[type, bool] = {exp.LT: v < value, exp.LTE: v <= value, exp.GT: v > value, exp.GTE: v >= value,
                               exp.EQ: v == value, exp.NEQ: v != value}
    return truth[op]


def _constant_on_bins(op: type, value: Fraction, domain: MMColumnDomain) -> bool:
    """Whether `col op value` has one truth value on each declared bin [e_i, e_(i+1))."""
    for a, b in zip(domain.edges, domain.edges[1:]):
        if domain.type == "int":
            first, last = Fraction(a), Fraction(b - 1)  # the integers a .. b-1 (edges are integers)
            if op in (exp.EQ, exp.NEQ):
                if first != last and first <= value <= last and value.denominator == 1:
                    return False
            elif _holds(op, first, value) != _holds(op, last, value):
                return False
            continue
        # Reals in [a, b): a strict or non-strict cut inside the bin splits it.
        if op in (exp.LT, exp.GTE) and a < value < b:
            return False
        if op in (exp.LTE, exp.GT) and a <= value < b:
            return False
        if op in (exp.EQ, exp.NEQ) and a <= value < b:
            return False
    return True
