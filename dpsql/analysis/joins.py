"""Joins and `IN (SELECT ... FROM public_table)`, turned into one private relation (ir/join.py).

Accepted (semantic_rules.md, "Joins"):
- a private table joined with `public = true` tables on equalities of columns: the public table is
  read exactly (no cost); one of a person's rows meets at most F rows of a public table, F the
  largest number of its rows sharing one value of its ON columns (a public fact, computed here
  from the public rows), so a person's joined rows are at most max_rows x F (F = 1: the join is
  many-to-one and keeps the sensitivity);
- private tables joined on their shared privacy unit (INNER or LEFT, optionally with more
  equalities): each table's bounded relation keeps at most max_rows_i rows of a person, and the
  join pairs rows of the same person only, so a person has at most the product of the max_rows;
- `col IN (SELECT key FROM public_table [WHERE ...])`: a predicate over public rows, one boolean
  per private row (it never adds rows).
The query is rewritten to one SELECT over the JoinedTable, so the rules, the binder and the planner
see one table whose `max_rows` is the bound above, enforced again after the join by the bounded
relation. Everything else that combines tables is refused with DP135-DP139, before any data is read.
"""

from __future__ import annotations

import dataclasses
import hashlib
from types import MappingProxyType

from sqlglot import exp

from dpsql.analysis.context import AnalysisContext, Scope, refuse
from dpsql.analysis.function_arguments import check_bounded_expressions
from dpsql.analysis.functions import function_name
from dpsql.analysis.public_facts import PublicFacts
from dpsql.analysis.rules import CATALOGS, SCHEMAS, check_functions
from dpsql.catalog.model import Column, Table
from dpsql.errors import UnknownColumnError, UnknownTableError
from dpsql.frontend.dialect import Dpsql
from dpsql.frontend.spans import keyword_span, span_of
from dpsql.ir.join import JoinColumn, JoinedTable, JoinKind, JoinPart, SemiJoin

MAX_PUBLIC_DOMAIN = 10_000  # distinct values of a public column released as a public domain; beyond: partition selection
_NUMERIC = ("int", "float")


def join_relation(select: exp.Select, ctx: AnalysisContext) -> tuple[exp.Select, Scope] | None:
    """The query over one JoinedTable when it joins tables or has public IN-subqueries; else None."""
    joins = select.args.get("joins") or []
    where = select.args.get("where")
    semis = [n for n in where.find_all(exp.In) if n.args.get("query") is not None] if where is not None else []
    from_ = select.args.get("from_")
    if not joins and not semis or from_ is None or select.args.get("laterals"):
        return None
    for node in select.find_all(exp.Subquery, exp.Exists):  # other subqueries in expressions stay refused
        if not any(node is semi.args["query"] for semi in semis) and node.find_ancestor(exp.From, exp.Join) is None:
            raise refuse("DP110", "subqueries in expressions are not accepted (only col IN (SELECT key FROM public_table) in WHERE)",
                         node, ctx.sql, "filter with IN (SELECT ...) over a public table, or join the table")
    return _JoinAnalysis(ctx).run(select, joins, semis)


class _JoinAnalysis:
    def __init__(self, ctx: AnalysisContext) -> None:
        self.ctx = ctx
        self.sql = ctx.sql
        self.parts: list[JoinPart] = []

    # --- parts and ON conditions -------------------------------------------------------------------
    def run(self, select: exp.Select, joins: list[exp.Join], semis: list[exp.In]) -> tuple[exp.Select, Scope]:
        source = select.args["from_"].this
        if select.args["from_"].expressions:
            raise refuse("DP135", "a comma-separated FROM list is a cross join", select.args["from_"], self.sql,
                         "join on the privacy unit or a public table's key: FROM people p JOIN visits v ON p.person_id = v.person_id")
        base = self._table(source)
        if base.public:
            raise refuse("DP135", f"a join must start FROM the private table, not the public table '{base.name}'", source, self.sql,
                         f"write FROM <private table> JOIN {base.name} ON ...")
        self.parts.append(JoinPart(table=base, alias=self._alias(source), kind="from"))
        for join in joins:
            self._join(join)
        semijoins = [self._semijoin(node, i) for i, node in enumerate(semis)]
        return self._rewrite(select, semis, semijoins)

    def _table(self, node: exp.Expr) -> Table:
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
        return table

    def _alias(self, node: exp.Table) -> str:
        alias = node.alias_or_name.lower()
        if any(p.alias == alias for p in self.parts):
            raise UnknownColumnError(f"the name '{alias}' is given to two tables of the join", code="DP111",
                                     span=span_of(node, self.sql), sql=self.sql, hint="give each joined table its own alias")
        return alias

    def _join(self, join: exp.Join) -> None:
        node = join.this
        kind, side, method = (join.args.get(k) for k in ("kind", "side", "method"))
        on, using = join.args.get("on"), join.args.get("using")
        word = " ".join(w for w in (method, side, kind) if w) or "JOIN"
        if method or side in ("RIGHT", "FULL") or kind not in (None, "INNER", "OUTER") or (kind == "OUTER" and side != "LEFT"):
            raise refuse("DP135", f"{word.upper()} JOIN is not accepted: dpsql accepts [INNER] JOIN and LEFT JOIN with ON or USING",
                         join, self.sql, "write FROM <private table> [LEFT] JOIN <table> ON a.col = b.col",
                         span=span_of(join, self.sql) or keyword_span(self.sql, "JOIN"))
        if on is None and not using:
            raise refuse("DP135", "a join without ON or USING is a cross join: every row meets every row, so one person's rows "
                         "are multiplied without bound", join, self.sql,
                         "join on the privacy unit or a public table's key: JOIN visits v ON p.person_id = v.person_id",
                         span=span_of(join, self.sql) or keyword_span(self.sql, "JOIN"))
        table = self._table(node)  # the join's shape is checked first: a cross join is refused whatever it reads
        if not table.public and any(p.table.name == table.name for p in self.parts):
            raise refuse("DP137", f"the private table '{table.name}' is read twice: a self-join pairs each of a person's rows with "
                         "all of their other rows", join, self.sql,
                         "read the table once; aggregate its rows directly or with CASE and FILTER")
        alias = self._alias(node)
        pairs = self._using(using, table, alias) if using else self._on(on, table, alias) if on is not None else ()
        part_kind: JoinKind = "left" if side == "LEFT" else "inner"
        if table.public:
            fanout = self._facts(join).max_fanout(table, tuple(dict.fromkeys(c for _, _, c in pairs)))
            self.parts.append(JoinPart(table=table, alias=alias, kind=part_kind, on=pairs, fanout=max(fanout, 1)))
            return
        self._check_unit(table, pairs, join)
        self.parts.append(JoinPart(table=table, alias=alias, kind=part_kind, on=pairs))

    def _facts(self, node: exp.Expr) -> PublicFacts:
        if self.ctx.facts is None:
            raise refuse("DP139", "a join with a public table needs the public table's rows (its fan-out and domains), and this "
                         "compilation has no session to read them", node, self.sql, "run the query in a dpsql session")
        return self.ctx.facts

    def _check_unit(self, table: Table, pairs: tuple[tuple[str, str, str], ...], join: exp.Join) -> None:
        """DP136: a private table joins an earlier private table on the privacy unit they share."""
        unit = table.privacy_unit
        assert unit is not None
        shared = [p for p in self.parts if not p.table.public and p.table.privacy_unit == unit
                  and p.table.columns[unit].type == table.columns[unit].type]
        if not shared:
            raise refuse("DP136", f"'{table.name}' and the private tables before it declare different privacy units", join, self.sql,
                         "join private tables only when they protect the same persons (the same privacy_unit column)")
        private = {p.alias: p.table for p in self.parts if not p.table.public}
        if not any(other in private and private[other].privacy_unit == left == unit and right == unit for other, left, right in pairs):
            raise refuse("DP136", f"two private tables must be joined on their privacy unit: add {unit} = {unit} to the ON "
                         "condition", join, self.sql,
                         f"write JOIN {table.name} ON <earlier table>.{unit} = {table.name}.{unit} (more equalities may follow with AND)")

    def _on(self, on: exp.Expr, table: Table, alias: str) -> tuple[tuple[str, str, str], ...]:
        pairs = []
        for conjunct in _conjuncts(on):
            if not (isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) and isinstance(conjunct.expression, exp.Column)):
                raise refuse("DP135", "ON takes equalities between columns, joined by AND", conjunct, self.sql,
                             "move other conditions to WHERE: JOIN t ON a.k = t.k WHERE ...")
            sides = [self._on_column(c, table, alias) for c in (conjunct.this, conjunct.expression)]
            mine = [s for s in sides if s[0] == alias]
            if len(mine) != 1:
                raise refuse("DP135", "each ON equality relates a column of the joined table to a column of a table before it",
                             conjunct, self.sql, f"write {alias}.<column> = <earlier table>.<column>")
            other = sides[0] if sides[1] is mine[0] else sides[1]
            self._same_type(other, mine[0], table, conjunct)
            pairs.append((other[0], other[1], mine[0][1]))
        return tuple(pairs)

    def _using(self, using: list[exp.Expr], table: Table, alias: str) -> tuple[tuple[str, str, str], ...]:
        pairs = []
        for ident in using:
            name = ident.name.lower()
            if table.column(name) is None:
                raise self._unknown(ident, name)
            having = [p for p in self.parts if p.table.column(name) is not None]
            if len(having) != 1:
                raise UnknownColumnError(f"USING ({name}) is ambiguous or names no column of the tables before the join", code="DP111",
                                         span=span_of(ident, self.sql), sql=self.sql, hint="write ON a.col = b.col")
            self._same_type((having[0].alias, name), (alias, name), table, ident)
            pairs.append((having[0].alias, name, name))
        return tuple(pairs)

    def _on_column(self, column: exp.Column, table: Table, alias: str) -> tuple[str, str]:
        parts = [*self.parts, JoinPart(table=table, alias=alias, kind="inner")]
        return _resolve(column, parts, self.sql)

    def _same_type(self, left: tuple[str, str], right: tuple[str, str], table: Table, node: exp.Expr) -> None:
        types = [self._part_table(a, table).columns[c].type for a, c in (left, right)]
        if types[0] != types[1] and not (types[0] in _NUMERIC and types[1] in _NUMERIC):
            raise refuse("DP135", f"the join compares columns of different types ({types[0]} and {types[1]})", node, self.sql,
                         "join columns of the same type")

    def _part_table(self, alias: str, joining: Table) -> Table:
        return next((p.table for p in self.parts if p.alias == alias), joining)

    # --- IN (SELECT key FROM public_table ...) ------------------------------------------------------
    def _semijoin(self, node: exp.In, index: int) -> SemiJoin:
        query = node.args["query"]
        body = query.this if isinstance(query, exp.Subquery) else query
        fix = "write col IN (SELECT key FROM <public table> WHERE ...), or JOIN the public table"
        if not isinstance(body, exp.Select) or any(v for k, v in body.args.items() if k not in ("expressions", "from_", "where")):
            raise refuse("DP138", "IN (SELECT ...) takes one plain SELECT of one column from one public table", query, self.sql, fix)
        source = body.args.get("from_")
        if source is None or source.expressions or not isinstance(source.this, exp.Table):
            raise refuse("DP138", "IN (SELECT ...) reads one public table", query, self.sql, fix)
        table = self._table(source.this)
        if not table.public:
            raise refuse("DP138", f"IN (SELECT ... FROM {table.name}) reads a private table: whether one person's value is in "
                         "another person's rows is not bounded by either person's contribution", query, self.sql,
                         "subqueries in WHERE may read public tables only; join private tables on the privacy unit instead")
        if len(body.expressions) != 1 or not isinstance(body.expressions[0], exp.Column) or isinstance(body.expressions[0].this, exp.Star):
            raise refuse("DP138", "IN (SELECT ...) selects exactly one column of the public table", query, self.sql, fix)
        if not isinstance(node.this, exp.Column):
            raise refuse("DP138", "the left side of IN (SELECT ...) must be a column", node.this, self.sql,
                         "compare a column: dept IN (SELECT name FROM depts)")
        names = {table.name, source.this.alias_or_name.lower()}
        for column in body.find_all(exp.Column):
            if column.table and column.table.lower() not in names:
                raise UnknownColumnError(f"'{column.sql()}' refers to a table the subquery does not read (correlated subqueries "
                                         "are not accepted)", code="DP111", span=span_of(column, self.sql), sql=self.sql,
                                         hint=f"name columns of {table.name} only inside IN (SELECT ...)")
            if table.column(column.name) is None:
                raise self._unknown(column, column.name, table)
        check_functions(body, self.sql)
        check_bounded_expressions(body, self.sql)
        part, column_name = _resolve(node.this, self.parts, self.sql)
        key = body.expressions[0].name.lower()
        self._same_type((part, column_name), (table.name, key), table, node)
        where = body.args.get("where")
        condition = where.this.copy().transform(_unqualified) if where is not None else None
        return SemiJoin(name=f"__in{index}", part=part, column=column_name, table=table, key=key, where=condition)

    # --- the rewritten query -------------------------------------------------------------------------
    def _rewrite(self, select: exp.Select, semis: list[exp.In], semijoins: list[SemiJoin]) -> tuple[exp.Select, Scope]:
        # Replace the IN predicates by their boolean columns on the original, then copy.
        flat = select.copy()
        copies = [n for n in flat.args["where"].find_all(exp.In) if n.args.get("query") is not None] if semis else []
        placeholders = {}
        for node, semi in zip(copies, semijoins):
            marker = _at(exp.column(semi.name), node)
            placeholders[id(marker)] = semi.name
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
        base = self.parts[0]
        unit = base.table.privacy_unit
        assert unit is not None
        mapping: list[JoinColumn] = []
        columns: dict[str, Column] = {}
        for part in self.parts:
            for name, column in part.table.columns.items():
                if part.kind == "inner" and not part.table.public and name == unit:
                    mapping.append(JoinColumn(name=unit, part=part.alias, column=name))  # equal to the base's unit
                    continue
                virtual = name if name not in columns else f"{part.alias}_{name}"
                while virtual in columns:
                    virtual += "_"
                mapping.append(JoinColumn(name=virtual, part=part.alias, column=name))
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
        base = self.parts[0].table
        max_rows = 1
        lines = []
        for part in self.parts:
            if part.table.public:
                max_rows *= part.fanout
                on = " AND ".join(f"{a}.{l} = {part.alias}.{r}" for a, l, r in part.on)
                how = ("many-to-one (each key matches at most 1 row): the sensitivity is kept" if part.fanout == 1 else
                       f"one-to-many (a key matches up to {part.fanout} rows): each person's row count is multiplied by {part.fanout}")
                lines.append(f"Join {part.kind.upper()} {part.table.name} AS {part.alias} ON {on}: public table, read exactly; {how}")
            else:
                max_rows *= part.table.max_rows
                on = " AND ".join(f"{a}.{l} = {part.alias}.{r}" for a, l, r in part.on)
                where = f"Join {part.kind.upper()} {part.table.name} AS {part.alias} ON {on}" if part.on else f"Scan {part.table.name} AS {part.alias}"
                lines.append(f"{where}: private, its bounded relation (at most {part.table.max_rows} row(s) per {part.table.privacy_unit})")
        for semi in semijoins:
            lines.append(f"Semi-join {semi.part}.{semi.column} IN (SELECT {semi.key} FROM {semi.table.name}"
                         f"{' WHERE ' + semi.where.sql(dialect=Dpsql) if semi.where is not None else ''}): public table, read exactly; adds no rows")
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
        digest = hashlib.sha256(repr((self.parts, mapping, semijoins)).encode()).hexdigest()[:12]
        return JoinedTable(name=f"{base.name}_join_{digest}", columns=MappingProxyType(columns), privacy_unit=base.privacy_unit,
                           max_rows=max_rows, max_groups=base.max_groups, parts=tuple(self.parts), mapping=tuple(mapping),
                           semijoins=tuple(semijoins), explain=tuple(lines))

    def _unknown(self, node: exp.Expr, name: str, table: Table | None = None) -> UnknownColumnError:
        where = f" of table '{table.name}'" if table is not None else ""
        return UnknownColumnError(f"column '{name}'{where} is not in the policy", code="DP111", span=span_of(node, self.sql),
                                  sql=self.sql, hint="use columns declared in the policy")


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
    if len(having) > 1:
        # The shared privacy unit, unqualified, is the first table's (as USING merges it; in a
        # LEFT JOIN the right table's unit is NULL where nothing matched).
        if {p.table.privacy_unit for p in having} != {name}:
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


def _unqualified(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Column) and node.table:
        return exp.column(node.name)
    return node
