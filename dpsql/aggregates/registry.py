"""Every aggregate family, found by its SQL spelling (binding) or its call's kind (planning).

A new aggregate is one module in dpsql/aggregates/ plus one line here (CONTRIBUTING.md, "Adding
an aggregate"); nothing outside the aggregate's module tests its name.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.aggregates.base import Aggregate, function_name
from dpsql.aggregates.counts import COUNTS
from dpsql.aggregates.mode import MODES
from dpsql.aggregates.quantiles import QUANTILES
from dpsql.aggregates.sums import SUMS
from dpsql.aggregates.trimmed_mean import TRIMMED_MEAN
from dpsql.aggregates.variance import VARIANCES
from dpsql.ir.query import AggregateCall

AGGREGATES: tuple[Aggregate, ...] = (
    COUNTS,
    SUMS,
    VARIANCES,
    QUANTILES,
    MODES,
    TRIMMED_MEAN,
)
_BY_KIND: dict[str, Aggregate] = {kind: aggregate for aggregate in AGGREGATES for kind in aggregate.kinds}
_BY_CLASS: dict[type[exp.Expr], Aggregate] = {cls: aggregate for aggregate in AGGREGATES for cls in aggregate.classes}
_BY_NAME: dict[str, Aggregate] = {name: aggregate for aggregate in AGGREGATES for name in aggregate.names}
CLASSES: tuple[type[exp.Expr], ...] = tuple(_BY_CLASS)  # the spellings with a mechanism, in registry order
NAMES: tuple[str, ...] = tuple(_BY_NAME)
KINDS: tuple[str, ...] = tuple(_BY_KIND)


def for_call(call: AggregateCall) -> Aggregate:
    """The aggregate that bound `call` and plans it."""
    return _BY_KIND[call.kind]


def for_node(node: exp.Expr) -> Aggregate | None:
    """The aggregate that binds a call node (inside WITHIN GROUP or FILTER too), or None."""
    if isinstance(node, (exp.WithinGroup, exp.Filter)):
        node = node.this
    if isinstance(node, exp.Anonymous):
        return _BY_NAME.get(function_name(node))
    return _BY_CLASS.get(type(node))
