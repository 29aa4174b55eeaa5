"""Joins and subquery predicates in WHERE, turned into one private relation (ir/join.py).

Accepted (semantic_rules.md, "Joins"):
- a private table joined with `public = true` tables on equalities of columns: the public table is
  read exactly (no cost); one of a person's rows meets at most F rows of a public table, F the
  largest number of its rows sharing one value of its ON columns (a public fact, computed here
  from the public rows), so a person's joined rows are at most max_rows x F (F = 1: the join is
  many-to-one and keeps the sensitivity);
- private tables that protect the same unit (`unit`, default: the privacy_unit column's name),
  joined on their unit columns whatever their names, or on columns declaring the same
  `identifier` (an order key), INNER or LEFT, directly or through a chain of such tables: each
  table's bounded relation keeps at most max_rows_i rows of a person, and the join pairs rows of
  the same person only (an identifier join gets the unit equality added, so the data cannot
  break that), so a person has at most the product of the max_rows;
- `[NOT] EXISTS (SELECT ... FROM t WHERE ...)` and `col [NOT] IN (SELECT key FROM t WHERE ...)`
  in WHERE, over a public table or over a private table of the same unit correlated on the unit
  or an identifier (read within the person, from its bounded relation): one boolean per row (a
  semi- or anti-join), which never adds rows.
Comma lists (`FROM a, b WHERE a.k = b.k`), joins written from a public table and ON conditions
spread over WHERE are normalised first: a leading run of inner joins is one set of tables and
equalities, ordered so that the private table leads and each table joins the tables before it.
The query is rewritten to one SELECT over the JoinedTable, so the rules, the binder and the
planner see one table whose `max_rows` is the bound above, enforced again after the join by the
bounded relation. Everything else that combines tables is refused with DP135-DP139, before any
data is read.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from types import MappingProxyType

from sqlglot import exp

from dpsql.analysis.context import AnalysisContext, Scope, refuse
from dpsql.analysis.expression_types import annotate, not_portable
from dpsql.analysis.function_arguments import check_bounded_expressions
from dpsql.analysis.functions import function_name
from dpsql.analysis.public_facts import PublicFacts
from dpsql.analysis.rules import CATALOGS, SCHEMAS, SUBQUERY_HINT, SUBQUERY_REFUSED, check_functions
from dpsql.catalog.policy import Column, Table
from dpsql.errors import CatalogError, UnknownColumnError, UnknownTableError
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.frontend.spans import keyword_span, span_of
from dpsql.ir.join import JoinColumn, JoinedTable, JoinKind, JoinPart, SemiJoin

MAX_PUBLIC_DOMAIN = 10_000  # distinct values of a public column released as a public domain; beyond: partition selection
_NUMERIC = ("int", "float")

Pair = tuple[str, str, str]  # (earlier part's alias, its column, this part's column)
Side = tuple[str, str]  # (part alias, column)


@dataclass(frozen=True, slots=True)
class _Operand:
    """A table of the FROM clause as written: its node, policy table, alias and the JOIN it came with."""

    node: exp.Table
    table: Table
    alias: str
    join: exp.Join | None


def join_relation(select: exp.Select, ctx: AnalysisContext) -> tuple[exp.Select, Scope] | None:
    """The query over one JoinedTable when it joins tables or has subquery predicates in WHERE; else None."""
    from_ = select.args.get("from_")
    if from_ is None or select.args.get("laterals"):
        return None
    where = select.args.get("where")
    if not select.args.get("joins") and (where is None or not _subquery_predicates(where.this)):
        return None  # one table, no subquery predicate: nothing to normalise (and no copy made)
    select = select.copy()  # normalised in place below
    where = select.args.get("where")
    semis = _subquery_predicates(where.this) if where is not None else []
    for node in select.find_all(exp.Subquery, exp.Exists, exp.Select):  # other subqueries stay refused
        if node is select or node.find_ancestor(exp.From, exp.Join) is not None or _inside(node, semis):
            continue
        raise refuse("DP110", SUBQUERY_REFUSED, node, ctx.sql, SUBQUERY_HINT, span=span_of(node, ctx.sql) or keyword_span(ctx.sql, "SELECT"))
    return _JoinAnalysis(ctx).run(select, semis)


def _subquery_predicates(node: exp.Expr) -> list[exp.In | exp.Exists]:
    """The outermost `IN (SELECT ...)` and `EXISTS (...)` nodes of a WHERE condition."""
    if isinstance(node, exp.Exists) or isinstance(node, exp.In) and node.args.get("query") is not None:
        return [node]
    found: list[exp.In | exp.Exists] = []
    for child in node.iter_expressions():
        found.extend(_subquery_predicates(child))
    return found


def _inside(node: exp.Expr, semis: list[exp.In | exp.Exists]) -> bool:
    parent: exp.Expr | None = node
    while parent is not None:
        if any(parent is s for s in semis):
            return True
        parent = parent.parent
    return False


class _JoinAnalysis:
    def __init__(self, ctx: AnalysisContext) -> None:
        self.ctx = ctx
        self.sql = ctx.sql
        self.parts: list[JoinPart] = []
        self.lines: list[str] = []  # EXPLAIN, per part, in join order
        self._all: list[_Operand] = []  # the FROM clause's tables as written

    # --- the tables and their order -------------------------------------------------------------------
    def run(self, select: exp.Select, semis: list[exp.In | exp.Exists]) -> tuple[exp.Select, Scope]:
        joins: list[exp.Join] = list(select.args.get("joins") or [])
        for join in joins:
            self._check_kind(join)
        operands = self._operands(select.args["from_"].this, joins)
        self._all = operands
        # A leading run of inner joins (commas included) is one set of tables and equalities,
        # in any order: it is normalised; the joins from the first LEFT JOIN on keep their order.
        first_left = next((i for i, j in enumerate(joins, start=1) if j.side == "LEFT"), len(operands))
        self._inner_group(select, operands[:first_left])
        for operand in operands[first_left:]:
            assert operand.join is not None
            self._written_join(select, operand)
        semijoins = [self._semijoin(node, i) for i, node in enumerate(semis)]
        return self._rewrite(select, semis, semijoins)

    def _check_kind(self, join: exp.Join) -> None:
        kind, side, method = (join.args.get(k) for k in ("kind", "side", "method"))
        word = " ".join(w for w in (method, side, kind) if w) or "JOIN"
        if method or side in ("RIGHT", "FULL") or kind not in (None, "INNER", "OUTER", "CROSS") or (kind == "OUTER" and side != "LEFT") \
                or (kind == "CROSS" and (join.args.get("on") is not None or join.args.get("using"))):
            raise refuse("DP135", f"{word.upper()} JOIN is not accepted: dpsql accepts [INNER] JOIN and LEFT JOIN with ON or USING, "
                         "and comma lists joined by equalities in WHERE", join, self.sql,
                         "write FROM <private table> [LEFT] JOIN <table> ON a.col = b.col",
                         span=span_of(join, self.sql) or keyword_span(self.sql, "JOIN"))
        if side == "LEFT" and join.args.get("on") is None and not join.args.get("using"):
            raise refuse("DP135", "a LEFT JOIN without ON or USING is a cross join: every row meets every row, so one person's "
                         "rows are multiplied without bound", join, self.sql,
                         "join on the privacy unit or a public table's key: LEFT JOIN visits v ON p.person_id = v.person_id",
                         span=span_of(join, self.sql) or keyword_span(self.sql, "JOIN"))

    def _operands(self, first: exp.Expr, joins: list[exp.Join]) -> list[_Operand]:
        operands: list[_Operand] = []
        for node, join in [(first, None), *((j.this, j) for j in joins)]:
            table = self._table(node)
            assert isinstance(node, exp.Table)
            alias = node.alias_or_name.lower()
            if not table.public and any(o.table.name == table.name for o in operands):
                raise refuse("DP137", f"the private table '{table.name}' is read twice: a self-join pairs each of a person's rows "
                             "with all of their other rows", join if join is not None else node, self.sql,
                             "read the table once; aggregate its rows directly or with CASE and FILTER (EXISTS may read it again)")
            if any(o.alias == alias for o in operands):
                raise UnknownColumnError(f"the name '{alias}' is given to two tables of the join", code="DP111",
                                         span=span_of(node, self.sql), sql=self.sql, hint="give each joined table its own alias")
            operands.append(_Operand(node, table, alias, join))
        return operands

    def _table(self, node: exp.Expr) -> Table:
        if isinstance(node, exp.Lateral):
            raise refuse("DP110", "LATERAL is not accepted: a lateral subquery is computed for each row over private rows",
                         node, self.sql, "join tables of the policy by name, or test the person's rows with EXISTS in WHERE",
                         span=keyword_span(self.sql, "LATERAL"))
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            what = f"the table function {function_name(node.this)}()" if isinstance(node, exp.Table) and isinstance(node.this, exp.Func) \
                else "a subquery, file path or function"
            raise refuse("DP103" if isinstance(node, exp.Table) else "DP110", f"{what} cannot be joined: joins read tables of the policy",
                         node, self.sql, "join tables declared in the policy by name")
        db, catalog = node.args.get("db"), node.args.get("catalog")
        if db is not None and db.name.lower() not in SCHEMAS or catalog is not None and catalog.name.lower() not in CATALOGS:
            raise refuse("DP103", f"'{node.sql(dialect=Dpsql)}' is outside the policy: tables live in the schema main (or public)",
                         node, self.sql, "join tables declared in the policy by name")
        table = self.ctx.policy.table(node.name)
        if table is None:
            known = ", ".join(sorted(self.ctx.policy.tables))
            raise UnknownTableError(f"table '{node.name}' is not in the policy", code="DP103", span=span_of(node, self.sql),
                                    sql=self.sql, hint=f"tables you may query: {known}")
        if not table.columns:
            raise CatalogError(f"table '{table.name}' declares no columns, and dpsql could not read them from its source",
                               code="DP002", span=span_of(node, self.sql), sql=self.sql,
                               hint=f"declare [tables.{table.name}.columns] in the policy, or give the table's data (a source, "
                               "a table of the database, or a DataFrame)")
        return table

    def _inner_group(self, select: exp.Select, operands: list[_Operand]) -> None:  # noqa: C901 - the join-order search and its refusals, kept in one place
        """Tables joined by inner joins and commas: their equalities (ON, USING, and WHERE
        conjuncts that equate columns of two of them) join them, in an order where a private
        table leads and each table meets the tables before it; other ON conditions become filters
        in WHERE (the same rows for inner joins)."""
        edges: list[tuple[Side, Side, exp.Expr]] = []
        filters: list[exp.Expr] = []
        for index, operand in enumerate(operands):
            join = operand.join
            if join is None:
                continue
            if join.args.get("using"):
                edges.extend(self._using(join.args["using"], operands[:index], operand))
            elif join.args.get("on") is not None:
                for conjunct in _conjuncts(join.args["on"]):
                    edge = self._edge(conjunct, operands)
                    if edge is not None:
                        edges.append(edge)
                    else:
                        filters.append(conjunct)
        where = select.args.get("where")
        conjuncts = _conjuncts(where.this) if where is not None else []
        kept: list[exp.Expr] = []
        for conjunct in conjuncts:
            edge = self._edge(conjunct, operands) if len(operands) > 1 else None
            if edge is not None:
                edges.append(edge)
                continue
            kept.append(conjunct)
            # An equality every branch of an OR requires (TPC-H Q19) also joins: the OR stays.
            edges.extend(self._required_by_or(conjunct, operands))
        if filters or len(kept) < len(conjuncts):
            _set_where(select, filters + kept)
        lead = next((o for o in operands if not o.table.public), None)
        if lead is None and len(operands) == len(self._all):
            raise refuse("DP138", "a query over public tables may not read a private table in a subquery: whether a person's "
                         "rows match would be released with no noise", operands[0].node, self.sql,
                         "count rows of a private table (FROM <private table> ... WHERE ...), or read public tables only")
        if lead is None:  # public tables only in the inner run, private ones LEFT-joined after it
            raise refuse("DP135", f"a join must start from a private table: the LEFT JOIN keeps rows of the public table "
                         f"'{operands[0].table.name}' that no person holds", operands[0].node, self.sql,
                         f"write FROM <private table> [LEFT] JOIN {operands[0].table.name} ON ...")
        placed = [lead]
        self.parts.append(JoinPart(table=lead.table, alias=lead.alias, kind="from"))
        self.lines.append(f"Scan {lead.table.name} AS {lead.alias}: private, its bounded relation "
                          f"(at most {lead.table.max_rows} row(s) per {_unit_text(lead.table)})")
        remaining = [o for o in operands if o is not lead]
        while remaining:
            ready = [o for o in remaining if any(self._between(e, o.alias, {p.alias for p in placed}) for e in edges)]
            if not ready:
                loose = remaining[0]
                raise refuse("DP135", f"'{loose.alias}' is joined to no other table by an equality of columns: a cross join "
                             "pairs every row with every row, so one person's rows are multiplied without bound",
                             loose.join if loose.join is not None else loose.node, self.sql,
                             "join on the privacy unit or a public table's key, in ON or as an equality in WHERE: "
                             "FROM people p, visits v WHERE p.person_id = v.person_id",
                             span=span_of(loose.node, self.sql))
            linked = [o for o in ready if not o.table.public and self._links(self._pairs(o, placed, edges), o.table)]
            public = [o for o in ready if o.table.public]
            chosen = (linked or public or ready)[0]
            pairs = self._pairs(chosen, placed, edges)
            self._add(chosen, pairs, "inner")
            placed.append(chosen)
            remaining.remove(chosen)

    def _written_join(self, select: exp.Select, operand: _Operand) -> None:
        """A join after the first LEFT JOIN, in written order with its own ON (or USING)."""
        join = operand.join
        assert join is not None
        earlier = [_Operand(exp.Table(), p.table, p.alias, None) for p in self.parts]
        left = join.side == "LEFT"
        own: list[exp.Expr] = []  # a LEFT JOIN's conditions on the joined table's own rows
        if join.args.get("using"):
            edges = self._using(join.args["using"], earlier, operand)
        elif join.args.get("on") is not None:
            edges, filters = [], []
            for conjunct in _conjuncts(join.args["on"]):
                edge = self._edge(conjunct, [*earlier, operand])
                if edge is None or operand.alias not in (edge[0][0], edge[1][0]):
                    if left:
                        own.append(self._own_filter(conjunct, earlier, operand))
                        continue
                    filters.append(conjunct)  # an inner join's other conditions filter the same rows in WHERE
                else:
                    edges.append(edge)
            where = select.args.get("where")
            _set_where(select, filters + (_conjuncts(where.this) if where is not None else []))
        else:
            raise refuse("DP135", "a join without ON or USING after a LEFT JOIN is a cross join: every row meets every row",
                         join, self.sql, "join on the privacy unit or a public table's key: JOIN t ON a.k = t.k",
                         span=span_of(join, self.sql) or keyword_span(self.sql, "JOIN"))
        placed = [o for o in earlier]
        pairs = self._pairs(operand, placed, edges)
        if not pairs:
            raise refuse("DP135", f"'{operand.alias}' is joined to no table before it by an equality of columns: a cross join",
                         join, self.sql, "join on the privacy unit or a public table's key: JOIN t ON a.k = t.k",
                         span=span_of(join, self.sql) or keyword_span(self.sql, "JOIN"))
        self._add(operand, pairs, "left" if left else "inner", _and(own))

    def _own_filter(self, conjunct: exp.Expr, earlier: list[_Operand], operand: _Operand) -> exp.Expr:
        """A LEFT JOIN's ON conjunct that reads only the joined table's columns (TPC-H Q13's
        `o_comment NOT LIKE ...`): it keeps the same rows as filtering that table before the join,
        so it is checked as a row filter (functions, engine work per row, portability) and
        returned with its columns qualified by the table's alias. Any other conjunct (reading the
        tables before it, a subquery or an aggregate) is refused (DP135)."""
        parts = [JoinPart(table=o.table, alias=o.alias, kind="inner") for o in [*earlier, operand]]
        fix = ("LEFT JOIN's ON takes equalities with the tables before it, and conditions on the joined table's own "
               "columns (LEFT JOIN t ON a.k = t.k AND t.x > 0); move other conditions to WHERE")
        nested = next(conjunct.find_all(exp.Subquery, exp.Exists, exp.Select, exp.Window), None)
        aggregate = next((f for f in conjunct.find_all(exp.AggFunc)), None)
        if nested is not None or aggregate is not None:
            raise refuse("DP135", "the ON condition of a LEFT JOIN may not hold a subquery, an aggregate or a window",
                         nested or aggregate or conjunct, self.sql, fix)
        condition = conjunct.copy()
        for column in list(condition.find_all(exp.Column)):
            part, name = _resolve(column, parts, self.sql)
            if part != operand.alias:
                raise refuse("DP135", f"the ON condition of a LEFT JOIN reads '{column.sql(dialect=Dpsql)}' of a table before "
                             f"the joined table '{operand.alias}' outside an equality of columns: the rows it keeps would "
                             "depend on the other table's row", conjunct, self.sql, fix)
            new = _at(exp.column(name, table=operand.alias, quoted=True), column)
            if column is condition:
                condition = new
            else:
                column.replace(new)
        check_functions(condition, self.sql)
        check_bounded_expressions(condition, self.sql)  # DP125: constant patterns, bounded work per row
        annotate(condition, operand.table)
        found = not_portable(condition)
        if found is not None:
            raise refuse("DP142", f"{found.reason}: dpsql answers only what every engine computes alike", found.node,
                         self.sql, found.hint)
        return condition

    # --- equalities ---------------------------------------------------------------------------------------
    def _edge(self, conjunct: exp.Expr, operands: list[_Operand]) -> tuple[Side, Side, exp.Expr] | None:
        """`a.x = b.y` between columns of two different operands, resolved; else None."""
        while isinstance(conjunct, exp.Paren):
            conjunct = conjunct.this
        if not (isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) and isinstance(conjunct.expression, exp.Column)):
            return None
        parts = [JoinPart(table=o.table, alias=o.alias, kind="inner") for o in operands]
        left, right = (_resolve(c, parts, self.sql) for c in (conjunct.this, conjunct.expression))
        if left[0] == right[0]:
            return None
        tables = {o.alias: o.table for o in operands}
        types = [tables[a].columns[c].type for a, c in (left, right)]
        if types[0] != types[1] and not (types[0] in _NUMERIC and types[1] in _NUMERIC):
            raise refuse("DP135", f"the join compares columns of different types ({types[0]} and {types[1]})", conjunct, self.sql,
                         "join columns of the same type")
        return left, right, conjunct

    def _required_by_or(self, conjunct: exp.Expr, operands: list[_Operand]) -> list[tuple[Side, Side, exp.Expr]]:
        node = conjunct
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Or) or len(operands) < 2:
            return []
        branches = _disjuncts(node)
        common: dict[frozenset[Side], tuple[Side, Side, exp.Expr]] | None = None
        for branch in branches:
            found = {}
            for part in _conjuncts(branch):
                edge = self._edge(part, operands)
                if edge is not None:
                    found[frozenset((edge[0], edge[1]))] = edge
            common = found if common is None else {k: v for k, v in common.items() if k in found}
        return list((common or {}).values())

    def _using(self, using: list[exp.Expr], earlier: list[_Operand], operand: _Operand) -> list[tuple[Side, Side, exp.Expr]]:
        edges = []
        for ident in using:
            name = ident.name.lower()
            if operand.table.column(name) is None:
                raise self._unknown(ident, name)
            having = [o for o in earlier if o.table.column(name) is not None]
            if len(having) != 1:
                raise UnknownColumnError(f"USING ({name}) is ambiguous or names no column of the tables before the join", code="DP111",
                                         span=span_of(ident, self.sql), sql=self.sql, hint="write ON a.col = b.col")
            types = (having[0].table.columns[name].type, operand.table.columns[name].type)
            if types[0] != types[1] and not (types[0] in _NUMERIC and types[1] in _NUMERIC):
                raise refuse("DP135", f"the join compares columns of different types ({types[0]} and {types[1]})", ident, self.sql,
                             "join columns of the same type")
            edges.append(((having[0].alias, name), (operand.alias, name), ident))
        return edges

    @staticmethod
    def _between(edge: tuple[Side, Side, exp.Expr], alias: str, placed: set[str]) -> bool:
        (a, _), (b, _), _ = edge
        return a == alias and b in placed or b == alias and a in placed

    def _pairs(self, operand: _Operand, placed: list[_Operand], edges: list[tuple[Side, Side, exp.Expr]]) -> tuple[Pair, ...]:
        """The equalities between `operand` and the tables placed before it, as ON pairs (deduplicated)."""
        names = {p.alias for p in placed}
        pairs: list[Pair] = []
        for edge in edges:
            if self._between(edge, operand.alias, names):
                (a, x), (b, y), _ = edge
                pair = (b, y, x) if a == operand.alias else (a, x, y)
                if pair not in pairs:
                    pairs.append(pair)
        return tuple(pairs)

    # --- one joined table -------------------------------------------------------------------------------
    def _add(self, operand: _Operand, pairs: tuple[Pair, ...], kind: JoinKind, where: exp.Expr | None = None) -> None:
        table, alias = operand.table, operand.alias
        node = operand.join if operand.join is not None else operand.node
        on = " AND ".join(f"{a}.{l} = {alias}.{r}" for a, l, r in pairs)
        if where is not None:
            shown = where.transform(lambda n: exp.to_identifier(n.name) if isinstance(n, exp.Identifier) else n)
            on += f" AND {shown.sql(dialect=Dpsql)} (a filter on {alias}'s rows before the join)"
        if table.public:
            # The fan-out is over all the public rows: a filter keeps fewer, never more, per key.
            fanout = self._facts(node).max_fanout(table, tuple(dict.fromkeys(c for _, _, c in pairs)))
            part = JoinPart(table=table, alias=alias, kind=kind, on=pairs, fanout=max(fanout, 1), where=where)
            how = ("many-to-one (each key matches at most 1 row): the sensitivity is kept" if part.fanout == 1 else
                   f"one-to-many (a key matches up to {part.fanout} rows): each person's row count is multiplied by {part.fanout}")
            self.lines.append(f"Join {kind.upper()} {table.name} AS {alias} ON {on}: public table, read exactly; {how}")
            self.parts.append(part)
            return
        links = self._check_unit(table, alias, pairs, node)
        lead = self.parts[0]
        within = None
        text = f"Join {kind.upper()} {table.name} AS {alias} ON {on}: private, its bounded relation (at most {table.max_rows} " \
               f"row(s) per {_unit_text(table)})"
        if "unit" not in links:
            assert lead.table.privacy_unit is not None and table.privacy_unit is not None
            within = (lead.alias, lead.table.privacy_unit, table.privacy_unit)
            named = ", ".join(sorted(links))
            text += (f"; joined on the identifier {named}, so the join adds {lead.alias}.{lead.table.privacy_unit} = "
                     f"{alias}.{table.privacy_unit}: rows of one {lead.table.unit_name} only")
        self.lines.append(text)
        self.parts.append(JoinPart(table=table, alias=alias, kind=kind, on=pairs, within=within, where=where))

    def _links(self, pairs: tuple[Pair, ...], table: Table) -> set[str]:
        """How `pairs` tie a private table to the private tables before it: "unit" (their unit
        columns equated) and/or the names of identifiers both declare. Empty: not tied."""
        private = {p.alias: p.table for p in self.parts if not p.table.public}
        found: set[str] = set()
        for other, left, right in pairs:
            earlier = private.get(other)
            if earlier is None or not earlier.shares_unit(table):
                continue
            if left == earlier.privacy_unit and right == table.privacy_unit:
                found.add("unit")
                continue
            identifier = earlier.columns[left].identifier
            if identifier is not None and identifier == table.columns[right].identifier:
                found.add(identifier)
        return found

    def _check_unit(self, table: Table, alias: str, pairs: tuple[Pair, ...], node: exp.Expr) -> set[str]:
        """DP136: a private table joins the private tables before it on the unit they share (or an identifier)."""
        lead = self.parts[0]
        if not lead.table.shares_unit(table):
            raise refuse("DP136", f"'{table.name}' and '{lead.table.name}' protect different units ({_unit_text(table)} and "
                         f"{_unit_text(lead.table)}): a join of their rows pairs different persons' data", node, self.sql,
                         "join private tables only when the policy gives them the same unit (`unit = \"...\"`, or the same "
                         "privacy_unit column name)")
        links = self._links(pairs, table)
        if not links:
            assert lead.table.privacy_unit is not None and table.privacy_unit is not None
            raise refuse("DP136", f"two private tables must be joined on their privacy unit: add {lead.alias}.{lead.table.privacy_unit} "
                         f"= {alias}.{table.privacy_unit} to the ON condition", node, self.sql,
                         f"write JOIN {table.name} ON <earlier table>.<its unit column> = {alias}.{table.privacy_unit} (or equate "
                         "columns both tables declare as the same identifier; more equalities may follow with AND)")
        return links

    def _facts(self, node: exp.Expr) -> PublicFacts:
        if self.ctx.facts is None:
            raise refuse("DP139", "a join with a public table needs the public table's rows (its fan-out and domains), and this "
                         "compilation has no session to read them", node, self.sql, "run the query in a dpsql session")
        return self.ctx.facts

    # --- [NOT] EXISTS and [NOT] IN (SELECT ...) ---------------------------------------------------------
    def _semijoin(self, node: exp.In | exp.Exists, index: int) -> SemiJoin:
        query = node.args["query"] if isinstance(node, exp.In) else node.this
        body = query.this if isinstance(query, exp.Subquery) else query
        fix = ("write EXISTS (SELECT 1 FROM <table> t WHERE t.<unit or key> = <outer column> AND ...), or col IN (SELECT key "
               "FROM <table> WHERE ...)")
        if not isinstance(body, exp.Select) or any(v for k, v in body.args.items() if k not in ("expressions", "from_", "where")):
            raise refuse("DP138", "a subquery in WHERE is one plain SELECT from one table (no GROUP BY, HAVING, DISTINCT, LIMIT, "
                         "join or set operation)", query, self.sql, fix)
        source = body.args.get("from_")
        if source is None or source.expressions or not isinstance(source.this, exp.Table):
            raise refuse("DP138", "a subquery in WHERE reads one table", query, self.sql, fix)
        nested = next((n for n in body.find_all(exp.Subquery, exp.Exists, exp.Select) if n is not body), None)
        if nested is not None:
            raise refuse("DP138", "a subquery in WHERE may not hold another subquery", nested, self.sql, fix)
        table = self._table(source.this)
        inner = source.this.alias_or_name.lower()
        alias = f"__s{index}"
        check_functions(body, self.sql)
        check_bounded_expressions(body, self.sql)
        where = body.args.get("where")
        condition, equalities = self._correlate(where.this if where is not None else None, table, {inner, table.name}, alias)
        part = column = key = None
        if isinstance(node, exp.In):
            selected = body.expressions
            if len(selected) != 1 or not isinstance(selected[0], exp.Column) or isinstance(selected[0].this, exp.Star):
                raise refuse("DP138", "IN (SELECT ...) selects exactly one column of the subquery's table", query, self.sql, fix)
            if not isinstance(node.this, exp.Column):
                raise refuse("DP138", "the left side of IN (SELECT ...) must be a column", node.this, self.sql,
                             "compare a column: dept IN (SELECT name FROM depts)")
            key = selected[0].name.lower()
            if table.column(key) is None or selected[0].table and selected[0].table.lower() not in {inner, table.name}:
                raise self._unknown(selected[0], key, table)
            part, column = _resolve(node.this, self.parts, self.sql)
            self._same_type((part, column), table.columns[key], node)
        within = None
        if not table.public:
            compared = ((part, column, key),) if part is not None and column is not None and key is not None else ()
            within = self._same_person(table, equalities, compared, query, inner)
        text = (f"{part}.{column} IN ({body.sql(dialect=Dpsql)})" if isinstance(node, exp.In)
                else f"EXISTS ({body.sql(dialect=Dpsql)})")
        return SemiJoin(name=f"__in{index}", kind="in" if isinstance(node, exp.In) else "exists", table=table, alias=alias,
                        text=text, where=condition, part=part, column=column, key=key, within=within)

    def _correlate(self, condition: exp.Expr | None, table: Table, names: set[str],
                   alias: str) -> tuple[exp.Expr | None, list[Pair]]:
        """The subquery's condition with its table's columns qualified by `alias` and the outer
        query's by their part's alias; and its top-level equalities (outer alias, outer column,
        the subquery table's column) that correlate it."""
        if condition is None:
            return None, []
        condition = condition.copy()
        sides: dict[int, Side | str] = {}
        for column in list(condition.find_all(exp.Column)):
            if isinstance(column.this, exp.Star):
                continue
            name = column.name.lower()
            qualifier = column.table.lower() if column.table else None
            if qualifier in names or qualifier is None and table.column(name) is not None:
                if table.column(name) is None:
                    raise self._unknown(column, name, table)
                new = exp.column(name, table=alias, quoted=True)
                sides[id(new)] = name
            else:
                outer = _resolve(column, self.parts, self.sql)
                new = exp.column(outer[1], table=outer[0], quoted=True)
                sides[id(new)] = outer
            if column is condition:
                condition = new
            else:
                column.replace(new)
        equalities: list[Pair] = []
        for conjunct in _conjuncts(condition):
            if isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) and isinstance(conjunct.expression, exp.Column):
                a, b = sides.get(id(conjunct.this)), sides.get(id(conjunct.expression))
                if isinstance(a, tuple) and isinstance(b, str):
                    equalities.append((a[0], a[1], b))
                elif isinstance(b, tuple) and isinstance(a, str):
                    equalities.append((b[0], b[1], a))
        return condition, equalities

    def _same_person(self, table: Table, equalities: list[Pair], compared: tuple[Pair, ...],
                     node: exp.Expr, inner: str) -> tuple[str, str, str] | None:
        """A subquery over a private table reads the same person's rows only: it must share the
        lead's unit and be tied to the outer row by its unit or an identifier, in its WHERE
        (`equalities`) or in IN's comparison (`compared`) (DP138). The returned equality (lead
        alias, lead unit, the table's unit column) is added to restrict every read of the table
        to that person whatever the data hold; None when its WHERE equates the units already.
        (IN's comparison alone is not enough: IN's NULL cases read the table without it.)"""
        lead = self.parts[0]
        if not lead.table.shares_unit(table):
            raise refuse("DP138", f"the subquery reads the private table '{table.name}', which protects another unit "
                         f"({_unit_text(table)}, not {_unit_text(lead.table)}): one person's rows would decide whether another "
                         "person's rows count", node, self.sql, "subqueries in WHERE may read public tables, or private tables of "
                         "the query's unit correlated on it")
        links = self._links(tuple(equalities), table)
        if not links and not self._links(compared, table):
            assert lead.table.privacy_unit is not None and table.privacy_unit is not None
            raise refuse("DP138", f"a subquery over the private table '{table.name}' must be correlated with the same person's "
                         "rows: whether one person's value is in another person's rows is not bounded by either person's "
                         "contribution", node, self.sql,
                         f"add {inner}.{table.privacy_unit} = {lead.alias}.{lead.table.privacy_unit} to its WHERE (or "
                         "equate an identifier both tables declare), or read a public table")
        assert lead.table.privacy_unit is not None and table.privacy_unit is not None
        return None if "unit" in links else (lead.alias, lead.table.privacy_unit, table.privacy_unit)

    def _same_type(self, outer: Side, column: Column, node: exp.Expr) -> None:
        mine = next(p.table for p in self.parts if p.alias == outer[0]).columns[outer[1]].type
        if mine != column.type and not (mine in _NUMERIC and column.type in _NUMERIC):
            raise refuse("DP135", f"the subquery compares columns of different types ({mine} and {column.type})", node, self.sql,
                         "compare columns of the same type")

    # --- the rewritten query -------------------------------------------------------------------------
    def _rewrite(self, flat: exp.Select, semis: list[exp.In | exp.Exists], semijoins: list[SemiJoin]) -> tuple[exp.Select, Scope]:
        placeholders = set()
        for node, semi in zip(semis, semijoins):  # each predicate becomes its boolean column
            marker = _at(exp.column(semi.name), node)
            placeholders.add(id(marker))
            node.replace(marker)
        flat.set("joins", None)
        mapping, columns = self._columns(semijoins)
        for item in list(flat.expressions):  # an unaliased column keeps the name the analyst sees
            if isinstance(item, exp.Column) and not isinstance(item.this, exp.Star):
                item.replace(exp.alias_(item.copy(), exp.to_identifier(item.name, quoted=item.this.quoted)))
        aliases = {e.alias.lower() for e in flat.expressions if isinstance(e, exp.Alias)}
        by_source = {(m.part, m.column): m.name for m in mapping}
        used: set[str] = set()
        for column in list(flat.find_all(exp.Column)):
            if isinstance(column.this, exp.Star) or id(column) in placeholders:
                continue
            clause = column.find_ancestor(exp.Where, exp.AggFunc, exp.Having, exp.Order, exp.Group)
            if not column.table and column.name.lower() in aliases and isinstance(clause, (exp.Having, exp.Order, exp.Group)) \
                    and not any(p.table.column(column.name) for p in self.parts):
                continue  # an output alias
            part, name = _resolve(column, self.parts, self.sql)
            used.add(by_source[(part, name)])
            column.replace(_at(exp.column(by_source[(part, name)], quoted=True), column))
        table = self._joined(mapping, columns, semijoins, used)
        flat.set("from_", exp.From(this=exp.Table(this=exp.to_identifier(table.name, quoted=True))))
        return flat, Scope(table=table, names=frozenset({table.name}))

    def _columns(self, semijoins: list[SemiJoin]) -> tuple[list[JoinColumn], dict[str, Column]]:
        """The joined relation's columns. The unit column of every private table inner-joined on
        the unit equals the lead's: it is the lead's unit column (GROUP BY it is DP107, COUNT
        DISTINCT counts persons). A LEFT-joined table's unit column stays a column of its own, an
        identifier of the person (GROUP BY it is DP140)."""
        lead = self.parts[0]
        unit = lead.table.privacy_unit
        assert unit is not None
        mapping: list[JoinColumn] = []
        columns: dict[str, Column] = {}
        for part in self.parts:
            for name, column in part.table.columns.items():
                if part.kind in ("from", "inner") and not part.table.public and name == part.table.privacy_unit:
                    mapping.append(JoinColumn(name=unit, part=part.alias, column=name))  # equal to the lead's unit
                    if part is lead:
                        columns[unit] = column
                    continue
                virtual = name if name not in columns else f"{part.alias}_{name}"
                while virtual in columns:
                    virtual += "_"
                mapping.append(JoinColumn(name=virtual, part=part.alias, column=name))
                if not part.table.public and name == part.table.privacy_unit:
                    column = dataclasses.replace(column, identifier=part.table.unit_name)
                columns[virtual] = dataclasses.replace(column, name=virtual)
        for semi in semijoins:
            columns[semi.name] = Column(name=semi.name, type="bool")
        return mapping, columns

    def _public_column(self, table: Table, column: Column, source: str) -> Column:
        """A public column with its public facts: its values as a public domain, its range as bounds."""
        facts = self._facts(exp.Table(this=exp.to_identifier(table.name)))
        changes: dict[str, object] = {}
        if column.numeric and not column.bounded:
            found = facts.value_range(table, source)
            if found is not None:
                changes.update(lower=found[0], upper=found[1])
        if column.values is None and column.type != "float":
            values = facts.distinct_values(table, source, MAX_PUBLIC_DOMAIN)
            if values is not None:
                changes["values"] = values
        return dataclasses.replace(column, **changes)  # type: ignore[arg-type]

    def _joined(self, mapping: list[JoinColumn], columns: dict[str, Column], semijoins: list[SemiJoin],
                used: set[str]) -> JoinedTable:
        lead = self.parts[0].table
        max_rows = 1
        for part in self.parts:
            max_rows *= part.fanout if part.table.public else part.table.max_rows
        lines = list(self.lines)
        for semi in semijoins:
            if semi.table.public:
                lines.append(f"Semi-join {semi.text}: public table, read exactly; adds no rows")
            else:
                how = "correlated on the unit"
                if semi.within is not None:
                    lead_alias, lead_unit, unit = semi.within
                    how = f"{semi.table.name}.{unit} = {lead_alias}.{lead_unit} added"
                lines.append(f"Semi-join {semi.text}: private, read within each {lead.unit_name} ({how}) from its bounded "
                             f"relation (at most {semi.table.max_rows} row(s) per {_unit_text(semi.table)}); adds no rows")
        factors = " x ".join(str(p.fanout if p.table.public else p.table.max_rows) for p in self.parts)
        caps = [p.table.join_max_rows for p in self.parts if not p.table.public and p.table.join_max_rows is not None]
        if len(self.parts) > 1 and caps and min(caps) < max_rows:
            # The data owner's smaller limit for joins: the bound after the join keeps that many
            # rows per person (chosen by the keyed hash), so every sensitivity uses it.
            lines.append(f"Joined rows per person: at most {factors} = {max_rows}, kept to join_max_rows = {min(caps)} "
                         "by the bound after the join")
            max_rows = min(caps)
        else:
            lines.append(f"Joined rows per person: at most {factors} = {max_rows} (bounded again after the join)")
        public = {p.alias: p.table for p in self.parts if p.table.public}
        for m in mapping:  # facts are read for the public columns the query uses
            if m.part in public and m.name in used:
                columns[m.name] = self._public_column(public[m.part], columns[m.name], m.column)
        filters = tuple(p.where.sql() for p in self.parts if p.where is not None)  # a LEFT JOIN's filters: other rows
        digest = hashlib.sha256(repr((self.parts, mapping, semijoins) + ((filters,) if filters else ())).encode()).hexdigest()[:12]
        return JoinedTable(name=f"{lead.name}_join_{digest}", columns=MappingProxyType(columns), privacy_unit=lead.privacy_unit,
                           max_rows=max_rows, max_groups=lead.max_groups, unit=lead.unit, parts=tuple(self.parts),
                           mapping=tuple(mapping), semijoins=tuple(semijoins), explain=tuple(lines))

    def _unknown(self, node: exp.Expr, name: str, table: Table | None = None) -> UnknownColumnError:
        where = f" of table '{table.name}'" if table is not None else ""
        return UnknownColumnError(f"column '{name}'{where} is not in the policy", code="DP111", span=span_of(node, self.sql),
                                  sql=self.sql, hint="use columns declared in the policy")


def _unit_text(table: Table) -> str:
    """`person_id`, or `customer (o_custkey)` when the unit has a name of its own."""
    return str(table.privacy_unit) if table.unit_name == table.privacy_unit else f"{table.unit_name} ({table.privacy_unit})"


def _resolve(column: exp.Column, parts: list[JoinPart], sql: str) -> tuple[str, str]:
    """(part alias, column name) of a column reference among the joined tables (DP111)."""
    name = column.name.lower()
    db, catalog = column.args.get("db"), column.args.get("catalog")
    if db is not None and db.name.lower() not in SCHEMAS or catalog is not None and catalog.name.lower() not in CATALOGS:
        raise UnknownColumnError(f"'{column.sql()}' refers to a table the query does not read", code="DP111",
                                 span=span_of(column, sql), sql=sql, hint="qualify columns with a table or alias of the join")
    if column.table:
        qualifier = column.table.lower()
        # Its alias, or (as for one table) the table's name when one joined table has that name.
        part = next((p for p in parts if p.alias == qualifier), None)
        named = [p for p in parts if p.table.name == qualifier]
        part = part if part is not None else named[0] if len(named) == 1 else None
        if part is None:
            raise UnknownColumnError(f"'{column.sql()}' refers to a table the query does not read", code="DP111",
                                     span=span_of(column, sql), sql=sql, hint="qualify columns with a table or alias of the join")
        if part.table.column(name) is None:
            known = ", ".join(part.table.columns)
            raise UnknownColumnError(f"column '{name}' is not in the policy for table '{part.table.name}'", code="DP111",
                                     span=span_of(column, sql), sql=sql, hint=f"columns you may use: {known}")
        return part.alias, name
    having = [p for p in parts if p.table.column(name) is not None]
    if not having:
        known = ", ".join(sorted({f"{p.alias}.{c}" for p in parts for c in p.table.columns}))
        raise UnknownColumnError(f"column '{name}' is in none of the joined tables", code="DP111", span=span_of(column, sql),
                                 sql=sql, hint=f"columns you may use: {known}")
    # The shared privacy unit, unqualified, is the first table's (as USING merges it; in a
    # LEFT JOIN the right table's unit is NULL where nothing matched).
    if len(having) > 1 and {p.table.privacy_unit for p in having} != {name}:
        raise UnknownColumnError(f"column '{name}' is ambiguous: more than one joined table has it", code="DP111",
                                 span=span_of(column, sql), sql=sql, hint=f"qualify it: {having[0].alias}.{name}")
    return having[0].alias, name


def _at(new: exp.Column, old: exp.Expr) -> exp.Column:
    """`new` placed where `old` was in the SQL text (refusals then point at the analyst's words)."""
    leaves = [leaf.meta for leaf in old.find_all(exp.Identifier) if "start" in leaf.meta and "end" in leaf.meta]
    if leaves:
        first = min(leaves, key=lambda m: m["start"])
        new.this.meta.update(first, start=first["start"], end=max(m["end"] for m in leaves))
    return new


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _disjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Or):
        return _disjuncts(node.this) + _disjuncts(node.expression)
    return [node]


def _and(conjuncts: list[exp.Expr]) -> exp.Expr | None:
    """The AND of `conjuncts` (each parenthesised where needed), or None."""
    if not conjuncts:
        return None
    return exp.and_(*[exp.paren(c, copy=False) if isinstance(c, exp.Connector) else c for c in conjuncts], copy=False)


def _set_where(select: exp.Select, conjuncts: list[exp.Expr]) -> None:
    """WHERE as the AND of `conjuncts` (none: no WHERE)."""
    if not conjuncts:
        select.set("where", None)
        return
    condition = conjuncts[0]
    for extra in conjuncts[1:]:
        left = exp.paren(condition, copy=False) if isinstance(condition, exp.Or) else condition
        right = exp.paren(extra, copy=False) if isinstance(extra, exp.Connector) else extra
        condition = exp.And(this=left, expression=right)
    select.set("where", exp.Where(this=condition))
