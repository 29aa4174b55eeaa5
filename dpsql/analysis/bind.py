"""Bind a validated SELECT to a BoundQuery: keys, aggregates, outputs, post-processing clauses.

Each aggregate call is bound by its family module (dpsql/aggregates/), found in the registry by
its spelling; the binder offers it the table, the options and the column checks (aggregates.base.Binder).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost, to_fraction
from dpsql.aggregates import quantiles, registry
from dpsql.aggregates.base import strip_qualifiers
from dpsql.analysis.context import AnalysisContext, Scope
from dpsql.analysis.functions import INTERVAL_FUNCTIONS, is_aggregate
from dpsql.analysis.group_domains import (
    MAX_PUBLIC_GROUPS,
    DerivedKey,
    NoDomain,
    cap_public_groups,
    derive_key,
    exact_key,
    listed_keys,
    narrowed,
)
from dpsql.analysis.value_bounds import NoBounds, value_bounds
from dpsql.catalog.policy import NOISES, Column, Table
from dpsql.errors import Error, InvalidOptionError
from dpsql.frontend.privacy_dialect import ContributionBounds, Dpsql, PrivacyOptions
from dpsql.frontend.spans import keyword_span
from dpsql.ir.plan import aggregate_high_name, aggregate_low_name, aggregate_width_name
from dpsql.ir.query import LISTED_BY_WHERE, AggregateCall, BoundQuery, ColumnRef, GroupKey, OrderItem, OutputColumn, refs

# BigQuery's names for what the policy states (`max_groups_contributed` may only lower max_groups;
# `privacy_unit_column` must name the table's unit): checked by `_bigquery_options`.
BIGQUERY_OPTIONS = frozenset({"max_groups_contributed", "privacy_unit_column"})
QUERY_OPTIONS = frozenset({"epsilon", "delta", "quantile_mechanism", "median_bound", "mode_blocks", "noise", "ci95", "clamp",
                           "interval_share",
                           "consistent"}) | BIGQUERY_OPTIONS
MAX_MODE_BLOCKS = 1_000_000


MAX_WHERE_KEYS = 1_000  # keys a WHERE range on an integer column may list (more: partition selection)
MIN_INTERVAL_SHARE = Fraction(1, 10)  # every value keeps an interval, and every interval a value


@dataclass(frozen=True, slots=True)
class RobustOptions:
    """The robust-aggregate settings of OPTIONS (...): public, part of the plan."""

    quantile_mechanism: str | None = None
    median_bound: Fraction | None = None
    mode_blocks: int | None = None
    noise: str | None = None  # 'laplace' | 'gaussian' for COUNT/SUM/AVG (None: the policy's default)
    ci95: Fraction | None = None  # a 95% half-width asked for instead of an epsilon
    ci95_node: exp.Expr | None = None  # where it was written (for a refusal's caret)
    clamp: bool = True  # released values clamped into their possible range (OPTIONS (clamp = false): unbiased)
    interval_share: Fraction | None = None  # a quantile's epsilon share for its interval (None: the mechanism's default)


def bind_select(select: exp.Select, scope: Scope, ctx: AnalysisContext) -> BoundQuery:
    """Turn a SELECT that passed the rules into a BoundQuery."""
    budget, explicit, robust = _options(select, ctx)
    return _Binder(_bigquery_options(select, scope, ctx), ctx, robust).bind(select, budget, explicit)


def _bigquery_options(select: exp.Select, scope: Scope, ctx: AnalysisContext) -> Scope:
    """BigQuery's OPTIONS (max_groups_contributed = k, privacy_unit_column = c), checked against the
    policy: k may lower the table's max_groups for this query (a smaller L0 bound, so less noise in
    partition selection), never raise it; c must be the table's privacy unit column. The policy
    stays the only source of sensitivity: these only restate it, or tighten it."""
    hint = select.args.get("hint")
    table = scope.table
    for item in hint.expressions if isinstance(hint, PrivacyOptions) else ():
        name = item.this.name.lower()
        if name == "privacy_unit_column":
            named = item.expression.name.lower() if isinstance(item.expression, (exp.Column, exp.Identifier, exp.Literal)) else ""
            if named != (table.privacy_unit or "").lower():
                raise InvalidOptionError(f"privacy_unit_column = {item.expression.sql()} is not the privacy unit of "
                                         f"'{table.name}' ({table.privacy_unit})", code="DP120", span=ctx.span(item),
                                         sql=ctx.sql, hint=f"the policy names the unit: write privacy_unit_column = "
                                         f"{table.privacy_unit}, or leave the option out")
        elif name == "max_groups_contributed":
            value = option_number(item.expression, name, ctx)
            if value.denominator != 1 or not 1 <= value <= table.max_groups:
                raise InvalidOptionError(f"max_groups_contributed must be an integer from 1 to the policy's max_groups "
                                         f"({table.max_groups}) for '{table.name}': a query may lower it, never raise it",
                                         code="DP120", span=ctx.span(item), sql=ctx.sql,
                                         hint=f"write max_groups_contributed = {table.max_groups} or less, or leave it out")
            table = dataclasses.replace(table, max_groups=int(value))
    return scope if table is scope.table else Scope(table=table, names=scope.names)


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
        self.key_where: exp.Expr | None = None  # the WHERE whose constant lists give key domains (listed_keys)
        self.where_listed: frozenset[str] = frozenset()  # bare key columns whose domain the WHERE lists (EXPLAIN says so)

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
            where=strip_qualifiers(where.this) if where else None,
            keys=tuple(d if d is not None else GroupKey(column=c, derivation=LISTED_BY_WHERE if c.name in self.where_listed else "")
                       for c, d in zip(self.keys, self.derived)),
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
            clamp=self.robust.clamp,
            interval_share=self.robust.interval_share,
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
            reason = registry.for_call(call).accuracy_first(call)
            if reason is not None:
                raise self.ctx.refuse("DP145", f"ci95 cannot be derived for {call.label}: its interval depends on the data "
                                      f"({reason})", node, "name an epsilon instead (EXPLAIN shows the interval it gives), "
                                      "or ask ci95 of COUNT and SUM only (AVG = SUM / COUNT after the query)")
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
        self.key_where = select.args.get("where")
        self._where_listed(select)
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

    def _where_listed(self, select: exp.Select) -> None:
        """Bare GROUP BY columns whose keys the WHERE lists get those keys as their public domain
        for this query (`_where_keys`): the scope's table carries them, so every reference agrees."""
        group = select.args.get("group")
        if group is None or self.key_where is None:
            return
        table = self.scope.table
        columns = dict(table.columns)
        listed = 1
        for item in group.expressions:
            column = table.column(item.name) if isinstance(item, exp.Column) else None
            values = self._where_keys(column, item) if column is not None else None
            if column is not None and values is not None:
                columns[column.name] = dataclasses.replace(column, values=values)
                listed *= len(values)
        # Every combination of listed keys is released: past MAX_PUBLIC_GROUPS, partition selection.
        if columns != dict(table.columns) and listed <= MAX_PUBLIC_GROUPS:
            self.scope = dataclasses.replace(self.scope, table=dataclasses.replace(table, columns=columns))
            self.where_listed = frozenset(n for n, c in columns.items() if c is not table.columns[n])

    def _where_keys(self, column: Column, target: exp.Column) -> tuple[Any, ...] | None:
        """A column without declared values whose keys the WHERE lists: `c IN (...)` / `c = v`, or
        an integer column's constant range (`age >= 5 AND age <= 17`, `BETWEEN`) of at most
        MAX_WHERE_KEYS values inside its bounds. Every row the WHERE keeps has one of those keys, so
        they are the key's public domain (constants in the SQL, like Tumult's KeySet): each is
        released, empty ones too, with no partition selection. Never for the privacy unit or an
        identifier (DP107, DP140: one group per person stays refused)."""
        if column.values is not None or column.name == self.scope.table.privacy_unit or column.identifier is not None:
            return None
        listed = listed_keys(target, self.key_where)
        values: tuple[Any, ...] | None = listed[1] if listed is not None and listed[0] == column.type else None
        if values is None and column.type == "int":
            narrow = self.key_table.column(column.name)
            if (narrow is not None and narrow.lower is not None and narrow.upper is not None
                    and (narrow.lower, narrow.upper) != (column.lower, column.upper)
                    and narrow.lower.denominator == 1 and narrow.upper.denominator == 1
                    and 0 < narrow.upper - narrow.lower + 1 <= MAX_WHERE_KEYS):
                values = tuple(range(int(narrow.lower), int(narrow.upper) + 1))
        return values or None

    def _derived_key(self, target: exp.Expr, item: exp.Expr) -> GroupKey:
        """GROUP BY an expression: its key column with the public domain derived from the policy."""
        span = self.ctx.span(item) or keyword_span(self.ctx.sql, "GROUP")
        aggregate = next((f for f in target.find_all(exp.Func) if is_aggregate(f) or registry.for_node(f) is not None), None)
        if aggregate is not None or isinstance(target, (exp.AggFunc, exp.WithinGroup, exp.Filter)):
            raise self.ctx.refuse("DP114", "GROUP BY names an aggregate", item, "group by columns or expressions over them", span=span)
        expr = strip_qualifiers(target)
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
        listed = listed_keys(expr, self.key_where) if derived.column.values is None else None
        if listed is not None and listed[0] == derived.column.type:  # `expr IN ('13', '31')` in WHERE: those keys
            derived = DerivedKey(dataclasses.replace(derived.column, values=listed[1]),
                                 f"{len(listed[1])} key(s) listed by the WHERE's constants")
        engine = exact_key(expr, self.key_table)  # LN/LOG/EXP of listed values as literals: every engine computes the listed keys
        return GroupKey(column=derived.column, expr=expr, derivation=derived.derivation, engine=engine if engine is not expr else None)

    # --- what an aggregate module's binding is offered (aggregates.base.Binder) ---------------------
    @property
    def table(self) -> Table:
        return self.scope.table

    @property
    def quantile_mechanism(self) -> str | None:
        return self.robust.quantile_mechanism

    @property
    def median_bound(self) -> Fraction | None:
        return self.robust.median_bound

    def refuse(self, code: str, message: str, node: exp.Expr, hint: str) -> Error:
        return self.ctx.refuse(code, message, node, hint)

    def invalid_option(self, message: str, node: exp.Expr, hint: str) -> Error:
        return self.ctx.invalid_option(message, node, hint)

    def column(self, arg: exp.Expr | None, node: exp.Expr) -> Column:
        return self._plain_column(arg, node)

    def per_row(self, label: str, arg: exp.Expr) -> Column:
        """A per-row expression's derived column, named by it, with bounds from the policy."""
        expr = strip_qualifiers(arg)
        name = expr.sql(dialect=Dpsql)
        try:
            bounds = value_bounds(expr, self.scope.table)
        except NoBounds as missing:
            part = missing.node.sql(dialect=Dpsql)
            raise self.ctx.refuse("DP115", f"{label}({name}) needs bounds, and dpsql cannot derive them from the "
                                  f"policy: in '{part}', {missing.reason}", arg,
                                  "use bounded numeric columns, number literals, + - * and / by a non-zero constant, CASE, "
                                  "or clamp with GREATEST(LEAST(x, upper), lower)") from None
        lower, upper = bounds.lower, bounds.upper
        assert lower is not None and upper is not None  # value_bounds returns finite intervals only
        if bounds.integer:
            return Column(name=name, type="int", lower=lower, upper=upper)
        # Widen the bounds onto the sum's fixed-point grid (a point interval such as SUM(9.36)
        # would otherwise hold no grid value); the grid is then fixed as the column's precision.
        grid = Column(name=name, type="float", lower=lower, upper=upper).grid()
        lower, upper = math.floor(lower / grid) * grid, math.ceil(upper / grid) * grid
        return Column(name=name, type="float", lower=lower, upper=upper, precision=grid)

    def _aggregate(self, node: exp.Expr) -> AggregateCall:
        text = node.sql(dialect=Dpsql)
        call = self._filtered(node) if isinstance(node, exp.Filter) else node
        aggregate = registry.for_node(call)
        assert aggregate is not None  # the rules refused aggregates without a mechanism (DP109)
        return aggregate.bind(call, self, text)

    def _filtered(self, node: exp.Filter) -> exp.Expr:
        """agg(x) FILTER (WHERE c) as agg(CASE WHEN c THEN x END) (COUNT(*): CASE WHEN c THEN 1 END)."""
        call, where = node.this, node.expression
        condition = where.this if isinstance(where, exp.Where) else where
        aggregate = registry.for_node(call)
        if aggregate is None or not aggregate.filterable or isinstance(call.this, exp.Distinct):
            raise self.ctx.refuse("DP115", "FILTER (WHERE ...) applies to COUNT, SUM and AVG (without DISTINCT) only", node,
                                  "write the condition in WHERE, or use COUNT(*) FILTER (WHERE ...)")
        inner = next((f for f in condition.find_all(exp.Func) if is_aggregate(f)), None)
        if inner is not None:
            raise self.ctx.refuse("DP112", "aggregates are not allowed in FILTER (WHERE ...)", inner, "filter rows, not aggregates")
        arg = call.this
        bounds = arg if isinstance(arg, ContributionBounds) else None  # BigQuery's bounds stay outside the CASE
        if bounds is not None:
            arg = bounds.this
        value = exp.Literal.number(1) if isinstance(arg, exp.Star) else arg
        rewritten: exp.Expr = call.copy()
        case = exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
        rewritten.set("this", case if bounds is None else ContributionBounds(this=case, expressions=[e.copy() for e in bounds.expressions]))
        return rewritten

    def _plain_column(self, arg: exp.Expr | None, node: exp.Expr) -> Column:
        if isinstance(arg, exp.Distinct):
            raise self.ctx.refuse("DP116", "DISTINCT is accepted inside COUNT, SUM and AVG only", node,
                                  "aggregate the column without DISTINCT")
        if not isinstance(arg, exp.Column):
            raise self.ctx.refuse("DP115", "an aggregate's argument must be a column of the policy", node,
                                  "aggregate a column; filter or transform rows in WHERE")
        column = self.scope.table.column(arg.name)
        assert column is not None
        return column

    def _replace(self, node: exp.Expr, outputs: tuple[OutputColumn, ...] = ()) -> exp.Expr:
        """Copy `node` with aggregates and key columns as ColumnRef placeholders; other columns are refused."""

        def visit(sub: exp.Expr) -> exp.Expr:
            if isinstance(sub, exp.Anonymous) and str(sub.this).lower() in INTERVAL_FUNCTIONS:
                return self._interval(sub)
            if isinstance(sub, (exp.AggFunc, exp.WithinGroup)) or registry.for_node(sub) is not None:
                return ColumnRef("aggregate", self._add_aggregate(sub)).column()
            derived = self._derived_ref(sub)
            if derived is not None:
                return derived
            if isinstance(sub, exp.Column):
                by_alias = next((o for o in outputs if o.name.lower() == sub.name.lower() and not sub.table), None)
                column = self.scope.table.column(sub.name)
                if column is not None and column in self.keys:
                    return ColumnRef("key", self.keys.index(column)).column()
                if by_alias is not None:  # `SUM(income) AS income ... ORDER BY income`: the column alone would be DP105
                    return by_alias.expr.copy()
                raise self.ctx.refuse("DP105", f"'{sub.sql()}' is neither aggregated nor a GROUP BY column", sub,
                                      f"wrap it in an aggregate such as COUNT({sub.name}), or add it to GROUP BY")
            return sub

        return node.copy().transform(visit)

    def _add_aggregate(self, node: exp.Expr) -> int:
        call = self._aggregate(node)
        if call not in self.aggregates:
            self.aggregates.append(call)
        return self.aggregates.index(call)

    def _interval(self, node: exp.Anonymous) -> exp.Expr:
        """CI95(agg), CI_LOW(agg), CI_HIGH(agg): the 95% half-width of the aggregate's release in
        this statement, or its interval's ends. The ends are the interval as computed, clipped to
        the range every true value lies in (a clamped COUNT of 0 has CI_LOW 0, not 0 - CI95), so
        they are not always value -/+ CI95; CI95 stays the one half-width (the larger side), for
        tools that read one number. They describe a release the statement makes anyway (its
        aggregate is released once, charged once): post-processing, free. Plain columns of the
        released-values table, not aggregate placeholders, so no interval is derived for the
        interval itself."""
        name = str(node.this).lower()
        args = node.expressions
        if len(args) != 1 or not (isinstance(args[0], (exp.AggFunc, exp.WithinGroup, exp.Filter))
                                  or registry.for_node(args[0]) is not None):
            raise self.ctx.refuse("DP146", f"{name.upper()}() takes one aggregate: it describes that aggregate's release", node,
                                  f"write {name.upper()}(COUNT(*)), {name.upper()}(SUM(income)), ...; for an expression over "
                                  "aggregates, combine the aggregates' own intervals after the query")
        index = self._add_aggregate(args[0])
        if name == "ci95":
            return exp.column(aggregate_width_name(index))
        return exp.column(aggregate_low_name(index) if name == "ci_low" else aggregate_high_name(index))

    def _derived_ref(self, node: exp.Expr) -> exp.Expr | None:
        """The key placeholder when `node` is a GROUP BY expression repeated (SELECT, HAVING, ORDER BY)."""
        if isinstance(node, (exp.Column, exp.Literal)) or not any(d is not None for d in self.derived):
            return None
        text = strip_qualifiers(node).sql(dialect=Dpsql)
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
    nodes: dict[str, exp.Expr] = {}
    for item in _own_options(hint):
        name = item.this.name.lower()
        if name not in QUERY_OPTIONS:
            raise InvalidOptionError(f"unknown privacy option '{name}'", code="DP120", span=ctx.span(item), sql=ctx.sql,
                                     hint=f"options: {', '.join(sorted(QUERY_OPTIONS))}")
        if name in _ROBUST_PARSERS:
            robust[name] = _ROBUST_PARSERS[name](item.expression, name, ctx)
        elif name == "ci95":
            robust[name] = _ci95_option(item.expression, ctx)
            robust["ci95_node"] = item
        elif name == "consistent":  # grouping sets' reconciliation (analysis/post_processing.py reads it): checked here
            _bool_option(item.expression, name, ctx)
        else:
            values[name] = option_number(item.expression, name, ctx)
            nodes[name] = item.expression
    options = RobustOptions(**robust)  # type: ignore[arg-type]
    if options.ci95 is not None and "epsilon" in {item.this.name.lower() for item in hint.expressions}:
        raise InvalidOptionError("give ci95 or epsilon, not both: ci95 = h derives the epsilon from the interval",
                                 code="DP144", span=ctx.span(options.ci95_node) if options.ci95_node is not None else None, sql=ctx.sql, hint="drop one of them")
    if options.median_bound is not None and quantiles.bound_conflicts(options.quantile_mechanism):
        raise InvalidOptionError(f"median_bound proposes a bound for PTR-Laplace; quantile_mechanism = "
                                 f"'{options.quantile_mechanism}' takes none", code="DP120", sql=ctx.sql,
                                 hint="drop median_bound, or set quantile_mechanism = 'ptr_laplace'")
    return check_budget_values(values["epsilon"], values["delta"], ctx, nodes), True, options


# The robust-aggregate options read from one value each: (node, name, ctx) -> the checked value.
_ROBUST_PARSERS: dict[str, Callable[[exp.Expr, str, AnalysisContext], object]] = {
    "quantile_mechanism": lambda node, _, ctx: _mechanism_option(node, ctx),
    "noise": lambda node, _, ctx: _noise_option(node, ctx),
    "median_bound": lambda node, name, ctx: _robust_number(node, name, ctx),
    "mode_blocks": lambda node, name, ctx: _robust_number(node, name, ctx),
    "clamp": lambda node, name, ctx: _bool_option(node, name, ctx),
    "interval_share": lambda node, _, ctx: _interval_share(node, ctx),
}


def _own_options(hint: PrivacyOptions) -> list[exp.Expr]:
    """The options `_options` reads: BigQuery's names are checked against the table by _bigquery_options."""
    return [item for item in hint.expressions if item.this.name.lower() not in BIGQUERY_OPTIONS]


def _bool_option(node: exp.Expr, name: str, ctx: AnalysisContext) -> bool:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    raise ctx.invalid_option(f"{name} takes true or false", node, f"write {name} = true or {name} = false")


def _noise_option(node: exp.Expr, ctx: AnalysisContext) -> str:
    text = node.name.lower() if isinstance(node, (exp.Literal, exp.Column, exp.Identifier, exp.Var)) else ""
    if text not in NOISES:
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
    mechanism = quantiles.mechanism_option(text)
    if mechanism is None:
        raise InvalidOptionError("quantile_mechanism must be 'smed', 'ptr_laplace' or 'exponential'", code="DP120",
                                 span=ctx.span(node), sql=ctx.sql, hint="e.g. quantile_mechanism = 'exponential'")
    return mechanism


def _interval_share(node: exp.Expr, ctx: AnalysisContext) -> Fraction:
    """OPTIONS (interval_share = s): the share of a quantile's epsilon (MEDIAN, QUANTILE, MIN, MAX,
    IQR by the exponential mechanism) that buys its 95% interval; the value gets the rest."""
    value = option_number(node, "interval_share", ctx)
    if not MIN_INTERVAL_SHARE <= value <= 1 - MIN_INTERVAL_SHARE:
        raise InvalidOptionError(f"interval_share must be from {float(MIN_INTERVAL_SHARE)} to {float(1 - MIN_INTERVAL_SHARE)}",
                                 code="DP120", span=ctx.span(node), sql=ctx.sql,
                                 hint="e.g. interval_share = 0.25: a more accurate value and a wider interval (default 0.6 for "
                                      "central quantiles, 0.4 for tails)")
    return value


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


def check_budget_values(epsilon: Fraction, delta: Fraction, ctx: AnalysisContext,
                        nodes: dict[str, exp.Expr] | None = None) -> PrivacyCost:
    """A per-query budget, refused unless epsilon > 0 and 0 <= delta < 1 (`nodes`: where each
    value was written, for the caret)."""
    where = nodes or {}
    if epsilon <= 0:
        raise InvalidOptionError("epsilon must be greater than 0", code="DP120", sql=ctx.sql, hint="e.g. epsilon = 0.1",
                                 span=ctx.span(where["epsilon"]) if "epsilon" in where else None)
    if not 0 <= delta < 1:
        raise InvalidOptionError("delta must be in [0, 1)", code="DP120", sql=ctx.sql, hint="e.g. delta = 1e-8",
                                 span=ctx.span(where["delta"]) if "delta" in where else None)
    return PrivacyCost(epsilon, delta)
