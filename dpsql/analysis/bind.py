"""Bind a validated SELECT to a BoundQuery: keys, aggregates, outputs, post-processing clauses."""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost, to_fraction
from dpsql.analysis.context import AnalysisContext, Scope
from dpsql.analysis.functions import ANONYMOUS_AGGREGATES, AGGREGATES, function_name, is_aggregate
from dpsql.analysis.group_domains import NoDomain, cap_public_groups, derive_key, narrowed
from dpsql.analysis.value_bounds import NoBounds, value_bounds
from dpsql.catalog.model import Column
from dpsql.errors import InvalidOptionError
from dpsql.frontend.dialect import Dpsql, PrivacyOptions
from dpsql.frontend.spans import keyword_span
from dpsql.ir.plan import median_grid
from dpsql.ir.query import AggKind, AggregateCall, BoundQuery, ColumnRef, GroupKey, OrderItem, OutputColumn, refs

MAX_QUANTILE_DENOMINATOR = 10**15
QUERY_OPTIONS = frozenset({"epsilon", "delta", "quantile_mechanism", "median_bound", "mode_blocks", "noise", "ci95"})
QUANTILE_MECHANISMS = {"smed": "smed", "ptr_laplace": "ptr-laplace", "ptr-laplace": "ptr-laplace",
                       "exponential": "exponential", "em": "exponential"}
MAX_MODE_BLOCKS = 1_000_000


@dataclass(frozen=True, slots=True)
class RobustOptions:
    """The robust-aggregate settings of OPTIONS (...): public, part of the plan."""

    quantile_mechanism: str | None = None
    median_bound: Fraction | None = None
    mode_blocks: int | None = None
    noise: str | None = None  # 'laplace' | 'gaussian' for COUNT/SUM/AVG (None: the policy's default)
    ci95: Fraction | None = None  # a 95% half-width asked for instead of an epsilon
    ci95_node: exp.Expr | None = None  # where it was written (for a refusal's caret)


def bind_select(select: exp.Select, scope: Scope, ctx: AnalysisContext) -> BoundQuery:
    """Turn a SELECT that passed the rules into a BoundQuery."""
    budget, explicit, robust = _options(select, ctx)
    return _Binder(scope, ctx, robust).bind(select, budget, explicit)


class _Binder:
    """One SELECT's binding: its scope, context (policy, SQL text), options, keys and aggregates."""

    def __init__(self, scope: Scope, ctx: AnalysisContext, robust: RobustOptions) -> None:
        self.scope = scope
        self.ctx = ctx
        self.robust = robust
        self.keys: list[Column] = []
        self.derived: list[GroupKey | None] = []  # per key: the derived key of a GROUP BY expression
        self.aggregates: list[AggregateCall] = []
        self.key_table = scope.table  # the table whose bounds derive key domains (narrowed by WHERE ranges)

    def bind(self, select: exp.Select, budget: PrivacyCost, explicit: bool) -> BoundQuery:
        self.keys = self._group_keys(select)
        outputs = tuple(self._output(item) for item in select.expressions)
        if not self.aggregates and not self.keys:
            raise self.ctx.refuse("DP105", "a query over a private table must aggregate", select.expressions[0],
                                  "wrap columns in COUNT, SUM or AVG, or GROUP BY them")
        if self.robust.ci95 is not None:
            self._check_accuracy_first(outputs)
        having = select.args.get("having")
        having_expr = self._replace(having.this, outputs) if having else None
        order = self._order(select, outputs)
        where = select.args.get("where")
        return BoundQuery(
            sql=self.ctx.sql,
            table=self.scope.table,
            where=_strip_qualifiers(where.this) if where else None,
            keys=tuple(d if d is not None else GroupKey(column=c) for c, d in zip(self.keys, self.derived)),
            aggregates=tuple(self.aggregates),
            outputs=outputs,
            having=having_expr,
            order=order,
            limit=self._int_clause(select, "limit"),
            offset=self._int_clause(select, "offset"),
            budget=budget,
            explicit_budget=explicit,
            quantile_mechanism=self.robust.quantile_mechanism,
            mode_blocks=self.robust.mode_blocks,
            noise=self.robust.noise or self.ctx.policy.budget.noise,
            ci95=self.robust.ci95,
        )

    def _check_accuracy_first(self, outputs: tuple[OutputColumn, ...]) -> None:
        """OPTIONS (ci95 = h) needs every noisy output to be one COUNT or SUM, whose half-width is a
        public function of epsilon. AVG divides by a noisy count (its interval depends on the data's
        count), robust aggregates' errors depend on the data's spread, and arithmetic on aggregates
        changes the interval: all refused (DP145), with the option under the caret."""
        node = self.robust.ci95_node
        if not self.aggregates:  # only keys (e.g. partition selection): no COUNT or SUM to size epsilon for
            raise self.ctx.refuse("DP145", "ci95 needs a COUNT or SUM to size epsilon for: this query releases keys only",
                                  node, "add COUNT(*) to the select list, or name an epsilon instead of ci95")
        for call in self.aggregates:
            if call.kind not in ("count_rows", "count", "count_units", "sum"):
                raise self.ctx.refuse("DP145", f"ci95 cannot be derived for {call.label}: its interval depends on the data "
                                      f"({'a noisy count divides it' if call.kind == 'avg' else 'its error depends on the values'})",
                                      node, "name an epsilon instead (EXPLAIN shows the interval it gives), or ask ci95 of "
                                      "COUNT and SUM only (AVG = SUM / COUNT after the query)")
        for output in outputs:
            bare = output.expr.unnest()  # parentheses around one aggregate change nothing
            if output.aggregates and (len(output.aggregates) > 1 or bare.find(exp.Column) != bare):
                raise self.ctx.refuse("DP145", f"ci95 cannot be derived for the output {output.name}: arithmetic on "
                                      "aggregates changes the interval", node,
                                      "select the bare COUNT or SUM and compute the expression after the query, or name an epsilon")

    def _group_keys(self, select: exp.Select) -> list[Column]:
        group = select.args.get("group")
        if group is None:
            return []
        self.key_table = narrowed(self.scope.table, select.args.get("where"))
        keys: list[Column] = []
        for item in group.expressions:
            column, derived = self._key_column(item, select)
            if column.name == self.scope.table.privacy_unit and derived is None:
                raise self.ctx.refuse("DP107", "GROUP BY the privacy unit would release one group per person", item,
                                      "group by a column that many people share")
            if derived is None:
                self._check_selection_can_release(column, item)
            if column not in keys:
                keys.append(column)
                self.derived.append(derived)
        self.derived = cap_public_groups(keys, self.derived)
        return [d.column if d is not None else c for c, d in zip(keys, self.derived)]

    def _check_selection_can_release(self, column: Column, item: exp.Expr) -> None:
        """A bare float or timestamp column without declared values (or precision) is continuous:
        persons almost never share a value exactly, so partition selection, which releases a key
        only when hundreds of persons hold it, can be expected to release nothing. Refused before
        the charge (DP141) from the policy's facts alone, with the bucketing that answers."""
        if column.public_domain or column.precision is not None or column.type not in ("float", "timestamp"):
            return
        bucket = (f"date_trunc('day', {column.name})" if column.type == "timestamp" else
                  f"FLOOR({column.name} / 10000) * 10000")  # `//` divides a DOUBLE exactly in DuckDB
        raise self.ctx.refuse("DP141", f"GROUP BY {column.name} would release almost nothing: it is a continuous "
                              f"{column.type} column without declared values, so almost no value is shared by enough "
                              "persons for partition selection to release it (the budget would be spent on an empty answer)",
                              item, f"group by buckets: {bucket}; or declare the column's values in the policy")

    def _key_column(self, item: exp.Expr, select: exp.Select) -> tuple[Column, GroupKey | None]:
        target = item
        if isinstance(item, exp.Literal) and not item.is_string:
            position = int(item.this) if item.this.isdigit() else 0  # GROUP BY 1.5 is no position either
            if not 1 <= position <= len(select.expressions):
                raise self.ctx.refuse("DP114", f"GROUP BY {item.this} is not a position in the select list", item,
                                      "number select items from 1", span=keyword_span(self.ctx.sql, "GROUP"))
            target = select.expressions[position - 1]
        elif isinstance(item, exp.Column) and not item.table:
            aliased = next((e for e in select.expressions if isinstance(e, exp.Alias) and e.alias.lower() == item.name.lower()), None)
            if aliased is not None and self.scope.table.column(item.name) is None:
                target = aliased
        target = target.this if isinstance(target, exp.Alias) else target
        while isinstance(target, exp.Paren):
            target = target.this
        if not isinstance(target, exp.Column):
            derived = self._derived_key(target, item)
            return derived.column, derived
        column = self.scope.table.column(target.name)
        assert column is not None  # DP111 ran before binding
        return column, None

    def _derived_key(self, target: exp.Expr, item: exp.Expr) -> GroupKey:
        """GROUP BY an expression: its key column with the public domain derived from the policy."""
        span = self.ctx.span(item) or keyword_span(self.ctx.sql, "GROUP")
        aggregate = next((f for f in target.find_all(exp.Func) if is_aggregate(f) or _robust_kind(f) is not None), None)
        if aggregate is not None or isinstance(target, (exp.AggFunc, exp.WithinGroup, exp.Filter)):
            raise self.ctx.refuse("DP114", "GROUP BY names an aggregate", item, "group by columns or expressions over them", span=span)
        expr = _strip_qualifiers(target)
        if not any(True for _ in expr.find_all(exp.Column)):
            raise self.ctx.refuse("DP114", "GROUP BY a constant groups nothing", item, "group by a column or an expression over columns",
                                  span=span)
        try:
            derived = derive_key(expr, self.key_table)
        except NoDomain as missing:
            raise self.ctx.refuse("DP114", f"GROUP BY {expr.sql(dialect=Dpsql)}: dpsql cannot use it as a key: in "
                                  f"'{missing.node.sql(dialect=Dpsql)}', {missing.reason}", item,
                                  "group by a column, a CASE with literal results, arithmetic over bounded integers, "
                                  "date_trunc/EXTRACT of a bounded date or timestamp, or a text function of a column with declared values",
                                  span=span) from None
        return GroupKey(column=derived.column, expr=expr, derivation=derived.derivation)

    def _aggregate(self, node: exp.Expr) -> AggregateCall:
        if isinstance(node, exp.Filter):
            return self._filtered(node)
        if _robust_kind(node) is not None:
            return self._robust_aggregate(node)
        text = node.sql(dialect=Dpsql)
        arg = node.this
        if isinstance(node, exp.Count):
            if isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not isinstance(arg, exp.Null)):
                return AggregateCall(kind="count_rows", column=None, text=text)
            if not isinstance(arg, (exp.Column, exp.Distinct)):
                return self._over_expression("count", arg, text)
            if isinstance(arg, exp.Distinct):
                inner = arg.expressions
                if len(inner) == 1 and isinstance(inner[0], exp.Column) and inner[0].name.lower() == self.scope.table.privacy_unit:
                    return AggregateCall(kind="count_units", column=self.scope.table.column(inner[0].name), text=text)
                raise self.ctx.refuse("DP116", "COUNT(DISTINCT ...) is accepted on the privacy unit only", node,
                                      f"count people with COUNT(DISTINCT {self.scope.table.privacy_unit}), or GROUP BY the column")
            column = self._plain_column(arg, node)
            return AggregateCall(kind="count", column=column, text=text)
        kind: AggKind = AGGREGATES[type(node)]  # type: ignore[assignment]  # sum, avg, var_*, stddev_*
        if arg is not None and not isinstance(arg, (exp.Column, exp.Distinct)):
            return self._over_expression(kind, arg, text)
        column = self._plain_column(arg, node)
        if not column.numeric:
            raise self.ctx.refuse("DP117", f"{kind.upper()} needs a numeric column; '{column.name}' is {column.type}", node,
                                  "sum, average or take the variance of an int or float column")
        if not column.bounded:
            raise self.ctx.refuse("DP106", f"{kind.upper()}({column.name}) needs public bounds for '{column.name}'", node,
                                  f"declare lower and upper for {column.name} under [tables.{self.scope.table.name}.columns] in the policy")
        return AggregateCall(kind=kind, column=column, text=text)

    def _filtered(self, node: exp.Filter) -> AggregateCall:
        """COUNT/SUM/AVG(...) FILTER (WHERE c): the aggregate of CASE WHEN c THEN value END."""
        call, where = node.this, node.expression
        condition = where.this if isinstance(where, exp.Where) else where
        if not isinstance(call, (exp.Count, exp.Sum, exp.Avg)) or isinstance(call.this, exp.Distinct):
            raise self.ctx.refuse("DP115", "FILTER (WHERE ...) applies to COUNT, SUM and AVG (without DISTINCT) only", node,
                                  "write the condition in WHERE, or use COUNT(*) FILTER (WHERE ...)")
        inner = next((f for f in condition.find_all(exp.Func) if is_aggregate(f)), None)
        if inner is not None:
            raise self.ctx.refuse("DP112", "aggregates are not allowed in FILTER (WHERE ...)", inner, "filter rows, not aggregates")
        arg = call.this
        value = exp.Literal.number(1) if isinstance(call, exp.Count) and isinstance(arg, exp.Star) else arg
        case = exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
        kind: AggKind = "count" if isinstance(call, exp.Count) else "sum" if isinstance(call, exp.Sum) else "avg"
        return self._over_expression(kind, case, node.sql(dialect=Dpsql))

    def _over_expression(self, kind: AggKind, arg: exp.Expr, text: str) -> AggregateCall:
        """COUNT, SUM or AVG of a per-row expression: a derived column with bounds from the policy."""
        expr = _strip_qualifiers(arg)
        name = expr.sql(dialect=Dpsql)
        if kind == "count":  # counts the rows where the value is not NULL: no bounds needed
            return AggregateCall(kind="count", column=Column(name=name, type="text"), text=text, expr=expr)
        try:
            bounds = value_bounds(expr, self.scope.table)
        except NoBounds as missing:
            part = missing.node.sql(dialect=Dpsql)
            raise self.ctx.refuse("DP115", f"{kind.upper()}({name}) needs bounds, and dpsql cannot derive them from the "
                                  f"policy: in '{part}', {missing.reason}", arg,
                                  "use bounded numeric columns, number literals, + - * and / by a non-zero constant, CASE, "
                                  "or clamp with GREATEST(LEAST(x, upper), lower)") from None
        lower, upper = bounds.lower, bounds.upper
        assert lower is not None and upper is not None  # value_bounds returns finite intervals only
        if bounds.integer:
            column = Column(name=name, type="int", lower=lower, upper=upper)
        else:
            # Widen the bounds onto the sum's fixed-point grid (a point interval such as SUM(9.36)
            # would otherwise hold no grid value); the grid is then fixed as the column's precision.
            grid = Column(name=name, type="float", lower=lower, upper=upper).grid()
            lower, upper = math.floor(lower / grid) * grid, math.ceil(upper / grid) * grid
            column = Column(name=name, type="float", lower=lower, upper=upper, precision=grid)
        return AggregateCall(kind=kind, column=column, text=text, expr=expr)

    def _robust_aggregate(self, node: exp.Expr) -> AggregateCall:
        """MEDIAN / QUANTILE / PERCENTILE_DISC / quantile_disc, IQR and MODE: their column and parameters."""
        kind = _robust_kind(node)
        text = node.sql(dialect=Dpsql)
        p: Fraction | None = Fraction(1, 2) if kind == "quantile" else None
        bound: Fraction | None = None
        if isinstance(node, exp.WithinGroup):
            order = node.expression
            items = order.expressions if isinstance(order, exp.Order) else []
            if len(items) != 1 or items[0].args.get("desc"):
                raise self.ctx.refuse("DP124", f"{function_name(node.this).upper()} WITHIN GROUP needs ORDER BY one column, ascending",
                                      node, "write PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY income)")
            arg = items[0].this
            if kind == "quantile":
                p = self._quantile_literal(node.this.this, node)
        elif isinstance(node, exp.Anonymous):
            args = node.expressions
            named = function_name(node)
            usage, most = (("QUANTILE(col, p) or QUANTILE(col, p, b)", 3) if named == "quantile" else
                           ("MEDIAN(col) or MEDIAN(col, b)", 2) if kind == "quantile" else ("IQR(col)", 1))
            if len(args) < (2 if named == "quantile" else 1) or len(args) > most:
                raise self.ctx.refuse("DP124", f"{named.upper()} takes {usage}", node, f"write {usage}")
            arg = args[0]
            if named == "quantile":
                p = self._quantile_literal(args[1], node)
            if len(args) == most and kind == "quantile":
                bound = self._bound_literal(args[-1], node)
        else:
            arg = node.this
            if isinstance(node, (exp.Min, exp.Max)):
                if node.expressions:
                    raise self.ctx.refuse("DP124", f"{function_name(node).upper()} takes one column", node,
                                          f"write {function_name(node).upper()}(col)")
                p = Fraction(0) if isinstance(node, exp.Min) else Fraction(1)
            elif isinstance(node, (exp.Quantile, exp.ApproxQuantile)):
                p = self._quantile_literal(node.args.get("quantile"), node)
            elif isinstance(node, (exp.PercentileDisc, exp.PercentileCont)):
                p = self._quantile_literal(node.args.get("expression"), node)
        column = self._plain_column(arg, node)
        if kind == "mode":
            return AggregateCall(kind="mode", column=column, text=text)
        name = ("IQR" if kind == "iqr" else "MEDIAN" if p == Fraction(1, 2) else "MIN" if p == 0 else "MAX" if p == 1
                else "QUANTILE")
        if column.type == "timestamp":
            raise self.ctx.refuse("DP117", f"{name} of a timestamp column is not supported; '{column.name}' is timestamp", node,
                                  "rank a date column, or count per date_trunc('day', col) group (MODE works on any column)")
        if column.type not in ("int", "float", "date"):
            raise self.ctx.refuse("DP117", f"{name} needs an int, float or date column; '{column.name}' is {column.type}", node,
                                  "rank a numeric or date column (MODE works on any column)")
        if kind == "iqr":
            return AggregateCall(kind="iqr", column=column, text=text)
        bound = bound if bound is not None or name in ("MIN", "MAX") else self.robust.median_bound
        self._check_quantile_mechanism(name, column, bound, node)
        return AggregateCall(kind="quantile", column=column, text=text, quantile=p, bound=bound)

    def _check_quantile_mechanism(self, name: str, column: Column, bound: Fraction | None, node: exp.Expr) -> None:
        option = self.robust.quantile_mechanism
        if name in ("MIN", "MAX"):  # always the fine-grid exponential mechanism (bound and option do not apply)
            if not column.bounded:
                raise self.ctx.refuse("DP106", f"the approximate {name}({column.name}) needs public bounds for '{column.name}'",
                                      node, f"declare lower and upper for {column.name} under [tables.{self.scope.table.name}.columns] in the policy")
            return
        if bound is not None and option in ("smed", "exponential"):
            raise InvalidOptionError(f"{name} with a proposed bound runs PTR-Laplace, but quantile_mechanism = '{option}'",
                                     code="DP120", span=self.ctx.span(node), sql=self.ctx.sql, hint="drop the bound or the option")
        mechanism = quantile_mechanism(bound, option, column.bounded)
        where = f"under [tables.{self.scope.table.name}.columns] in the policy"
        if mechanism == "ptr-laplace" and bound is None:
            raise InvalidOptionError(f"quantile_mechanism = 'ptr_laplace' needs a proposed bound for {name}({column.name})",
                                     code="DP120", span=self.ctx.span(node), sql=self.ctx.sql,
                                     hint=f"write {name}({column.name}, b) or add median_bound = b to OPTIONS")
        if mechanism == "exponential" and not column.bounded:
            raise self.ctx.refuse("DP106", f"the exponential-mechanism {name}({column.name}) needs public bounds for '{column.name}'",
                                  node, f"declare lower and upper for {column.name} {where}")
        if mechanism == "smed" and median_grid(column) is None:
            raise self.ctx.refuse("DP106", f"{name}({column.name}) ranks a float column on a public grid: declare 'precision' "
                                  f"(or lower and upper) for '{column.name}'", node,
                                  f"e.g. precision = 100 for {column.name} {where}, or propose a bound: {name}({column.name}, b)")

    def _quantile_literal(self, node: exp.Expr | None, call: exp.Expr) -> Fraction:
        value = _number_literal(node)
        # p = a/b in lowest terms scales the exponential mechanism's score sensitivity by b: keep b sane
        if value is None or not 0 < value < 1 or value.denominator > MAX_QUANTILE_DENOMINATOR:
            raise self.ctx.refuse("DP124", "the quantile p must be a number literal strictly between 0 and 1, "
                                  "with at most 15 decimal digits", call,
                                  "write QUANTILE(age, 0.25) or PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY age)")
        return value

    def _bound_literal(self, node: exp.Expr, call: exp.Expr) -> Fraction:
        value = _number_literal(node)
        if value is None or value <= 0:
            raise self.ctx.refuse("DP124", "the proposed bound b of MEDIAN(col, b) or QUANTILE(col, p, b) must be a number literal greater than 0", call,
                                  "write MEDIAN(income, 100): b bounds how far one person may move the median")
        return value

    def _plain_column(self, arg: exp.Expr | None, node: exp.Expr) -> Column:
        if isinstance(arg, exp.Distinct):
            raise self.ctx.refuse("DP116", "DISTINCT inside SUM/AVG is not accepted", node, "aggregate the column without DISTINCT")
        if not isinstance(arg, exp.Column):
            raise self.ctx.refuse("DP115", "an aggregate's argument must be a column of the policy", node,
                                  "aggregate a column; filter or transform rows in WHERE")
        column = self.scope.table.column(arg.name)
        assert column is not None
        return column

    def _replace(self, node: exp.Expr, outputs: tuple[OutputColumn, ...] = ()) -> exp.Expr:
        """Copy `node` with aggregates and key columns as ColumnRef placeholders; other columns are refused."""

        def visit(sub: exp.Expr) -> exp.Expr:
            if isinstance(sub, (exp.AggFunc, exp.WithinGroup)) or _robust_kind(sub) is not None or (
                    isinstance(sub, exp.Filter) and isinstance(sub.this, exp.AggFunc)):
                call = self._aggregate(sub)
                if call not in self.aggregates:
                    self.aggregates.append(call)
                return ColumnRef("aggregate", self.aggregates.index(call)).column()
            derived = self._derived_ref(sub)
            if derived is not None:
                return derived
            if isinstance(sub, exp.Column):
                by_alias = next((o for o in outputs if o.name.lower() == sub.name.lower() and not sub.table), None)
                if by_alias is not None and self.scope.table.column(sub.name) is None:
                    return by_alias.expr.copy()
                column = self.scope.table.column(sub.name)
                if column is not None and column in self.keys:
                    return ColumnRef("key", self.keys.index(column)).column()
                raise self.ctx.refuse("DP105", f"'{sub.sql()}' is neither aggregated nor a GROUP BY column", sub,
                                      f"wrap it in an aggregate such as COUNT({sub.name}), or add it to GROUP BY")
            return sub

        return node.copy().transform(visit)

    def _derived_ref(self, node: exp.Expr) -> exp.Expr | None:
        """The key placeholder when `node` is a GROUP BY expression repeated (SELECT, HAVING, ORDER BY)."""
        if isinstance(node, (exp.Column, exp.Literal)) or not any(d is not None for d in self.derived):
            return None
        text = _strip_qualifiers(node).sql(dialect=Dpsql)
        for index, derived in enumerate(self.derived):
            if derived is not None and derived.expr is not None and derived.expr.sql(dialect=Dpsql) == text:
                return ColumnRef("key", index).column()
        return None

    def _output(self, item: exp.Expr) -> OutputColumn:
        body = item.this if isinstance(item, exp.Alias) else item
        expr = self._replace(body)
        if isinstance(item, exp.Alias):
            name = item.alias
        elif isinstance(body, exp.Column):
            name = body.name
        else:
            name = body.sql(dialect=Dpsql)
        ref = ColumnRef.of(expr)
        key = ref.index if ref is not None and ref.kind == "key" else None
        used = tuple(sorted(refs(expr, "aggregate")))
        return OutputColumn(name=name, expr=expr, key=key, aggregates=used)

    def _order(self, select: exp.Select, outputs: tuple[OutputColumn, ...]) -> tuple[OrderItem, ...]:
        order = select.args.get("order")
        if order is None:
            return ()
        items = []
        for ordered in order.expressions:
            target = ordered.this
            if isinstance(target, exp.Literal) and not target.is_string:
                position = int(target.this) if target.this.isdigit() else 0  # ORDER BY 1.5 is no position either
                if not 1 <= position <= len(outputs):
                    raise self.ctx.refuse("DP114", f"ORDER BY {target.this} is not a position in the select list", ordered,
                                          "number select items from 1", span=keyword_span(self.ctx.sql, "ORDER"))
                expr = outputs[position - 1].expr.copy()
            else:
                expr = self._replace(target, outputs)
            nulls_first = ordered.args.get("nulls_first")
            items.append(OrderItem(expr=expr, descending=bool(ordered.args.get("desc")), nulls_first=nulls_first))
        return tuple(items)

    def _int_clause(self, select: exp.Select, name: str) -> int | None:
        clause = select.args.get(name)
        if clause is None:
            return None
        value = clause.expression if isinstance(clause, (exp.Limit, exp.Offset)) else clause
        if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit() and len(value.this) <= 18:
            return int(value.this)
        raise self.ctx.refuse("DP119", f"{name.upper()} takes a non-negative integer literal", clause,
                              f"write {name.upper()} 10 (at most 18 digits)", span=keyword_span(self.ctx.sql, name.upper()))


def _options(select: exp.Select, ctx: AnalysisContext) -> tuple[PrivacyCost, bool, RobustOptions]:
    hint = select.args.get("hint")
    if not isinstance(hint, PrivacyOptions):
        return ctx.default_budget, False, RobustOptions()
    values = {"epsilon": ctx.default_budget.epsilon, "delta": ctx.default_budget.delta}
    robust: dict[str, object] = {}
    for item in hint.expressions:
        name = item.this.name.lower()
        if name not in QUERY_OPTIONS:
            raise InvalidOptionError(f"unknown privacy option '{name}'", code="DP120", span=ctx.span(item), sql=ctx.sql,
                                     hint=f"options: {', '.join(sorted(QUERY_OPTIONS))}")
        if name == "quantile_mechanism":
            robust[name] = _mechanism_option(item.expression, ctx)
        elif name == "noise":
            robust[name] = _noise_option(item.expression, ctx)
        elif name == "ci95":
            robust[name] = _ci95_option(item.expression, ctx)
            robust["ci95_node"] = item
        elif name in ("median_bound", "mode_blocks"):
            robust[name] = _robust_number(item.expression, name, ctx)
        else:
            values[name] = option_number(item.expression, name, ctx)
    options = RobustOptions(**robust)  # type: ignore[arg-type]
    if options.ci95 is not None and "epsilon" in {item.this.name.lower() for item in hint.expressions}:
        raise InvalidOptionError("give ci95 or epsilon, not both: ci95 = h derives the epsilon from the interval",
                                 code="DP144", span=ctx.span(options.ci95_node) if options.ci95_node is not None else None, sql=ctx.sql, hint="drop one of them")
    if options.median_bound is not None and options.quantile_mechanism in ("smed", "exponential"):
        raise InvalidOptionError(f"median_bound proposes a bound for PTR-Laplace; quantile_mechanism = "
                                 f"'{options.quantile_mechanism}' takes none", code="DP120", sql=ctx.sql,
                                 hint="drop median_bound, or set quantile_mechanism = 'ptr_laplace'")
    return check_budget_values(values["epsilon"], values["delta"], ctx), True, options


def _noise_option(node: exp.Expr, ctx: AnalysisContext) -> str:
    text = node.name.lower() if isinstance(node, (exp.Literal, exp.Column, exp.Identifier, exp.Var)) else ""
    if text not in ("laplace", "gaussian"):
        raise InvalidOptionError("noise must be 'laplace' or 'gaussian'", code="DP143", span=ctx.span(node), sql=ctx.sql,
                                 hint="e.g. noise = 'gaussian' (COUNT, SUM and AVG; needs delta > 0)")
    return text


def _ci95_option(node: exp.Expr, ctx: AnalysisContext) -> Fraction:
    value = option_number(node, "ci95", ctx)
    if value <= 0:
        raise InvalidOptionError("ci95 must be greater than 0", code="DP144", span=ctx.span(node), sql=ctx.sql,
                                 hint="the 95% half-width every noisy cell should have, in the aggregate's units, e.g. ci95 = 50")
    return value


def _mechanism_option(node: exp.Expr, ctx: AnalysisContext) -> str:
    text = node.name.lower() if isinstance(node, (exp.Literal, exp.Column, exp.Identifier, exp.Var)) else ""
    if text not in QUANTILE_MECHANISMS:
        raise InvalidOptionError("quantile_mechanism must be 'smed', 'ptr_laplace' or 'exponential'", code="DP120",
                                 span=ctx.span(node), sql=ctx.sql, hint="e.g. quantile_mechanism = 'exponential'")
    return QUANTILE_MECHANISMS[text]


def _robust_number(node: exp.Expr, name: str, ctx: AnalysisContext) -> Fraction | int:
    value = option_number(node, name, ctx)
    if name == "median_bound":
        if value <= 0:
            raise InvalidOptionError("median_bound must be greater than 0", code="DP120", span=ctx.span(node), sql=ctx.sql,
                                     hint="the proposed bound b on how far one person can move the median, e.g. median_bound = 100")
        return value
    if value.denominator != 1 or not 1 <= value <= MAX_MODE_BLOCKS:
        raise InvalidOptionError(f"mode_blocks must be an integer from 1 to {MAX_MODE_BLOCKS}", code="DP120",
                                 span=ctx.span(node), sql=ctx.sql, hint="e.g. mode_blocks = 200")
    return int(value)


def option_number(node: exp.Expr, name: str, ctx: AnalysisContext) -> Fraction:
    """The exact number a privacy option or setting is set to."""
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if not isinstance(inner, exp.Literal) or inner.is_string:
        raise InvalidOptionError(f"'{name}' must be set to a number", code="DP120", span=ctx.span(node), sql=ctx.sql)
    if not _plain_number(inner.this):
        raise InvalidOptionError(
            f"'{name}' must be a decimal number of at most {_OPTION_DIGITS} characters between 1e-{_OPTION_EXPONENT} "
            f"and 1e{_OPTION_EXPONENT}", code="DP120", span=ctx.span(node), sql=ctx.sql, hint="e.g. epsilon = 0.1, delta = 1e-8")
    value = to_fraction(inner.this)
    return -value if negative else value


# Privacy options are written by people: a few significant digits and a modest exponent. Longer
# literals would only reach float conversions (overflow) or Python's digit limit (ValueError).
_OPTION_DIGITS = 40
_OPTION_EXPONENT = 30


def _plain_number(text: str) -> bool:
    """A decimal literal short enough, and zero or of a magnitude within 1e-30 .. 1e30."""
    if len(text) > _OPTION_DIGITS:
        return False
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return False
    return number.is_finite() and (number == 0 or -_OPTION_EXPONENT <= number.adjusted() <= _OPTION_EXPONENT)


def check_budget_values(epsilon: Fraction, delta: Fraction, ctx: AnalysisContext) -> PrivacyCost:
    """A per-query budget, refused unless epsilon > 0 and 0 <= delta < 1."""
    if epsilon <= 0:
        raise InvalidOptionError("epsilon must be greater than 0", code="DP120", sql=ctx.sql, hint="e.g. epsilon = 0.1")
    if not 0 <= delta < 1:
        raise InvalidOptionError("delta must be in [0, 1)", code="DP120", sql=ctx.sql, hint="e.g. delta = 1e-8")
    return PrivacyCost(epsilon, delta)


def _robust_kind(node: exp.Expr) -> str | None:
    """"quantile", "iqr" or "mode" for a robust aggregate call (WITHIN GROUP forms too), else None."""
    if isinstance(node, exp.WithinGroup):
        node = node.this
    if isinstance(node, exp.Anonymous):
        return ANONYMOUS_AGGREGATES.get(function_name(node))
    kind = AGGREGATES.get(type(node))
    return kind if kind in ("quantile", "mode") else None


def quantile_mechanism(bound: Fraction | None, option: str | None, bounded: bool = False) -> str:
    """The mechanism of a quantile, from public facts only: PTR-Laplace with a proposed bound, else
    the option, else the exponential mechanism over a fine grid (about 2^24 steps) on a bounded
    column (it never refuses, its rank error grows only with the log of the grid, and it states a
    95% interval), else SMed (the only one for a column with a precision but no bounds)."""
    if bound is not None:
        return "ptr-laplace"
    return option or ("exponential-fine" if bounded else "smed")


def _number_literal(node: exp.Expr | None) -> Fraction | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return to_fraction(node.this)
        except (ValueError, ZeroDivisionError):
            return None
    return None


def _strip_qualifiers(node: exp.Expr) -> exp.Expr:
    def visit(sub: exp.Expr) -> exp.Expr:
        if isinstance(sub, exp.Column) and sub.table:
            return exp.column(sub.name)
        return sub

    return node.copy().transform(visit)
