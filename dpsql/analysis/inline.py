"""Row-level derived relations (subqueries in FROM, CTEs) and qualified table names, flattened.

BI tools wrap the analyst's table: Superset reads `FROM (SELECT * FROM people) AS virtual_table`,
Metabase `FROM (SELECT "people"."dept" AS "dept" FROM "people") AS "source"`, Tableau and the
pgwire clients write `"public"."people"`. A body that is row-level (projections, renames, derived
columns, WHERE; no aggregate, DISTINCT, LIMIT, ORDER BY, window or join) has one output row per
input row, so the outer query over it is the same query over the base table with each derived
column replaced by its defining expression and the filters joined by AND. This module performs
that rewrite before the rules run: the rules, the binder and the planner then see one SELECT over
one policy table, and per-person bounding on the base table keeps its meaning (semantic_rules.md,
"Row-level derived relations"). Anything else stays refused, before any data is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dpsql.analysis.context import refuse
from dpsql.analysis.function_arguments import check_bounded_expressions
from dpsql.analysis.functions import function_name, is_aggregate
from dpsql.analysis.rules import CATALOGS, SCHEMAS, SUBQUERY_HINT, SUBQUERY_REFUSED, check_functions
from dpsql.analysis.views import referenced_views
from dpsql.catalog.policy import Policy
from dpsql.errors import UnknownColumnError
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.frontend.spans import keyword_span, span_of

# The parts of a SELECT a row-level body may have; any other clause makes it more than row-level.
_ROW_LEVEL_ARGS = frozenset({"expressions", "from_", "where", "with_", "kind"})
_CLAUSE_WORDS = {"group": "GROUP BY", "having": "HAVING", "distinct": "DISTINCT", "order": "ORDER BY", "limit": "LIMIT",
                 "offset": "OFFSET", "qualify": "QUALIFY", "windows": "WINDOW", "joins": "JOIN", "laterals": "LATERAL",
                 "sample": "SAMPLE", "hint": "OPTIONS"}


@dataclass(frozen=True, slots=True)
class _Relation:
    """What a FROM item exposes: named columns as expressions over the base table, and the
    filter the base rows pass. `base` is the policy table's node (unqualified, no alias); for a
    body that joins tables of the policy, `base` keeps its alias, `joins` holds the body's joins
    and the definitions are columns qualified by the joined tables' names."""

    base: exp.Table
    columns: dict[str, list[exp.Expr]]  # lower-case name -> its definitions (two: ambiguous)
    where: exp.Expr | None
    hidden: frozenset[str]  # the base table's column names (lower case), exposed or not
    joins: tuple[exp.Join, ...] = ()


def flatten(select: exp.Select, policy: Policy, sql: str) -> exp.Select:
    """`select` with a qualified table name, a row-level subquery or a CTE in FROM rewritten into
    the same query over the base table. Other shapes come back unchanged for the rules to judge."""
    if select.args.get("laterals") or select.args.get("from_") is None:
        return select
    select, views = referenced_views(select, policy)  # the policy's views: inlined like CTEs defined outside
    select = _hoisted(select)  # FROM (a JOIN b ON ...): the join itself
    if select.args.get("joins"):
        return _flatten_join_operands(select, policy, sql, views)
    source = select.args["from_"].this
    ctes = _ctes(select, sql, views)
    for name in ctes:  # every CTE is row-level over the policy, used or not
        _relation(exp.Table(this=exp.to_identifier(name)), ctes, policy, sql)
    if isinstance(source, exp.Table) and _plain_name(source) not in ctes:
        if ctes or source.args.get("db") or source.args.get("catalog"):
            select = select.copy()
            select.set("with_", None)  # unused CTEs: checked above, never run
            _unqualify(select.args["from_"].this, policy, sql)
            _unqualify_columns(select, sql)
        return select
    if not isinstance(source, (exp.Table, exp.Subquery)):
        return select
    _refuse_expression_subqueries(select, sql, semi_joins=True)
    relation = _relation(source, ctes, policy, sql)
    flat = select.copy()
    flat.set("with_", None)
    flat.set("from_", exp.From(this=relation.base.copy()))
    _keep_output_names(flat)
    _substitute(flat, relation, _qualifiers(source), sql, policy)
    if relation.joins:  # after the substitution: the ON columns are the joined tables' own
        flat.set("joins", [j.copy() for j in relation.joins])
    if relation.where is not None:
        where = flat.args.get("where")
        combined = relation.where.copy() if where is None else _conjoin(relation.where.copy(), where.this)
        flat.set("where", exp.Where(this=combined))
    return flat


def _flatten_join_operands(select: exp.Select, policy: Policy, sql: str, views: dict[str, exp.Select]) -> exp.Select:  # noqa: C901 - one pass over the join's operands; each case is a refusal with its own message
    """A join whose operands include row-level subqueries or CTEs over one table each, rewritten to
    join the base tables under the operands' names: each column the query reads through an
    operand is replaced by its definition over that operand's table, and the operands' WHERE
    clauses are joined to the query's WHERE by AND. That is the same join when the filtered
    operand's rows are kept whatever they meet: the FROM operand and INNER JOIN operands. The
    right side of a LEFT JOIN with a WHERE stays refused (moved to the query's WHERE, its filter
    would drop the unmatched rows the LEFT JOIN keeps).

    USING (c) over such operands becomes ON <the earlier operand with c>.c = <this operand>.c
    before the substitution, so each side is the column the operand exposes under that name
    (`JOIN (SELECT dept_id AS person_id ...) s USING (person_id)` joins on dept_id and is refused
    as the same join written with ON is, DP136), and an unqualified c reads the earlier operand's,
    the column USING merges."""
    ctes = _ctes(select, sql, views)
    for name in ctes:  # every CTE is row-level over the policy, used or not
        _relation(exp.Table(this=exp.to_identifier(name)), ctes, policy, sql)
    flat = select.copy()
    flat.set("with_", None)
    operands: list[tuple[exp.Expr, exp.Join | None]] = [(flat.args["from_"].this, None), *((j.this, j) for j in flat.args["joins"])]
    derived: dict[str, _Relation] = {}
    filters: list[exp.Expr] = []
    plain: set[str] = set()  # the columns of the operands that are tables (lower case)
    exposed: list[tuple[str, set[str]] | None] = []  # per operand: its qualifier and column names (None: unknown)
    for node, join in operands:
        named_cte = isinstance(node, exp.Table) and _plain_name(node) in ctes
        if not isinstance(node, exp.Subquery) and not named_cte:
            table = policy.table(node.name) if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) else None
            plain.update(n.lower() for n in (table.columns if table is not None else ()))
            exposed.append((node.alias_or_name.lower(), {n.lower() for n in table.columns}) if table is not None else None)
            continue
        qualifier = (node.alias or (node.name if named_cte else "")).lower()
        if not qualifier:
            raise refuse("DP110", "a joined subquery needs a name", node, sql, "name it: JOIN (SELECT ...) AS s ON ...")
        relation = _relation(node, ctes, policy, sql)
        if relation.joins:
            raise refuse("DP110", "a subquery or CTE that joins tables cannot itself be joined", node, sql,
                         "write one join of the tables of the policy by name")
        if relation.where is not None:
            if join is not None and join.side.upper() == "LEFT":
                raise refuse("DP110", "a subquery or CTE with WHERE on the right of a LEFT JOIN is not accepted: as a filter "
                             "of the whole query it would drop the rows the LEFT JOIN keeps unmatched", node, sql,
                             "join the table itself with LEFT JOIN (its unmatched rows kept), or use an inner JOIN")
            filters.append(_qualify_all(relation.where.copy(), qualifier, policy))
        derived[qualifier] = relation
        exposed.append((qualifier, set(relation.columns)))
        node.replace(exp.Table(this=relation.base.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(qualifier))))
    if not derived:
        return select
    merged = _using_as_on(flat.args["joins"], exposed, sql)
    _refuse_expression_subqueries(flat, sql)
    _keep_output_names(flat)
    aliases = {e.alias.lower() for e in flat.expressions if isinstance(e, exp.Alias)}
    for column in list(flat.find_all(exp.Column)):
        if isinstance(column.this, exp.Star):
            continue
        if not column.table and column.name.lower() in merged and column.name.lower() not in aliases:
            column.set("table", exp.to_identifier(merged[column.name.lower()]))  # the column USING merged
        owner = column.table.lower() if column.table else _only_owner(column, derived, plain, sql)
        if owner not in derived or (not column.table and column.name.lower() in aliases
                                    and isinstance(column.find_ancestor(exp.Having, exp.Order, exp.Group), (exp.Having, exp.Order, exp.Group))):
            continue
        definition = _definition(column, derived[owner], {owner}, sql, set())
        if definition is not None:
            column.replace(_qualify_all(definition, owner))
    if filters:
        where = flat.args.get("where")
        combined = filters[0]
        for extra in filters[1:]:
            combined = _conjoin(combined, extra)
        flat.set("where", exp.Where(this=combined if where is None else _conjoin(combined, where.this)))
    return flat


def _using_as_on(joins: list[exp.Join], exposed: list[tuple[str, set[str]] | None], sql: str) -> dict[str, str]:
    """Each join's USING (c, ...) as ON earlier.c = this.c AND ... (in place); the merged names,
    each to the operand whose column an unqualified reference reads. A join whose operands are
    not all known keeps its USING (the join analysis refuses the unknown table)."""
    merged: dict[str, str] = {}
    if any(e is None for e in exposed):
        return merged
    for index, join in enumerate(joins, start=1):
        using = join.args.get("using")
        if not using:
            continue
        right = exposed[index]
        assert right is not None
        equalities: list[exp.Expr] = []
        for ident in using:
            name = ident.name.lower()
            owners = [e[0] for e in exposed[:index] if e is not None and name in e[1]]
            if len(owners) != 1:
                raise UnknownColumnError(f"USING ({name}) is ambiguous or names no column of the tables before the join",
                                         code="DP111", span=span_of(ident, sql), sql=sql, hint="write ON a.col = b.col")
            equalities.append(exp.EQ(this=exp.column(name, table=owners[0]), expression=exp.column(name, table=right[0])))
            merged.setdefault(name, owners[0])
        condition = equalities[0]
        for equality in equalities[1:]:
            condition = exp.And(this=condition, expression=equality)
        join.set("using", None)
        join.set("on", condition)
    return merged


def _only_owner(column: exp.Column, derived: dict[str, _Relation], plain: set[str], sql: str) -> str | None:
    """The derived operand an unqualified column belongs to: the only operand that has the name
    (DP111 when a derived operand and another operand both have it; None when no derived one
    does: the join analysis resolves it among the tables)."""
    name = column.name.lower()
    owners = [q for q, relation in derived.items() if name in relation.columns]
    if owners and (len(owners) > 1 or name in plain):
        raise UnknownColumnError(f"column '{column.name}' is ambiguous: more than one joined table or subquery has it",
                                 code="DP111", span=span_of(column, sql), sql=sql, hint=f"qualify it: {owners[0]}.{column.name}")
    return owners[0] if owners else None


def _qualify_all(expr: exp.Expr, qualifier: str, policy: Policy | None = None) -> exp.Expr:
    """`expr` (over one base table, unqualified) with every column qualified by `qualifier` (given
    the policy, not the columns an EXISTS or IN subquery inside it reads of its own tables)."""
    if isinstance(expr, exp.Column):
        return exp.column(expr.name, table=qualifier) if not isinstance(expr.this, exp.Star) else expr
    for column in _outer_columns(expr, policy) if policy is not None else list(expr.find_all(exp.Column)):
        if not isinstance(column.this, exp.Star):
            column.replace(exp.column(column.name, table=qualifier))
    return expr


def _outer_columns(expr: exp.Expr, policy: Policy) -> list[exp.Column]:
    """The columns of `expr` that name the relation it is over: every column but those that a
    subquery inside it (EXISTS, IN) resolves among its own tables, as SQL scopes names (the
    innermost query first; a qualifier names a table, an unqualified name any table that has it)."""
    found = []
    for column in expr.find_all(exp.Column):
        if isinstance(column.this, exp.Star):
            continue
        node = column.parent
        own = False
        while node is not None and node is not expr and not own:
            own = isinstance(node, exp.Select) and _resolves(column, node, policy)
            node = node.parent
        if not own:
            found.append(column)
    return found


def _resolves(column: exp.Column, select: exp.Select, policy: Policy) -> bool:
    """Whether a column inside `select` names one of its own FROM tables' columns."""
    from_ = select.args.get("from_")
    tables = [t for t in [from_.this if from_ is not None else None, *(j.this for j in select.args.get("joins") or [])]
              if isinstance(t, exp.Table)]
    if column.table:
        return column.table.lower() in {t.alias_or_name.lower() for t in tables}  # an alias hides the table's name
    for node in tables:
        table = policy.table(node.name) if isinstance(node.this, exp.Identifier) else None
        if table is None or table.column(column.name) is not None:
            return True  # a table dpsql cannot see into counts as having it: the join analysis judges the subquery
    return False


def _conjoin(left: exp.Expr, right: exp.Expr) -> exp.Expr:
    """left AND right, parenthesised only where SQL's precedence needs it (as an analyst writes it)."""
    left = exp.paren(left, copy=False) if isinstance(left, exp.Or) else left
    right = exp.paren(right, copy=False) if isinstance(right, exp.Connector) else right
    return exp.And(this=left, expression=right)


def _plain_name(table: exp.Table) -> str | None:
    return table.name.lower() if isinstance(table.this, exp.Identifier) and not table.args.get("db") else None


def _ctes(select: exp.Select, sql: str, outer: dict[str, exp.Select]) -> dict[str, exp.Select]:
    """The CTEs a SELECT may read by name: its own (each seeing those before it) over the outer ones."""
    with_ = select.args.get("with_")
    if with_ is None:
        return outer
    if with_.args.get("recursive"):
        raise refuse("DP110", "WITH RECURSIVE is not accepted", with_, sql, "write a row-level WITH over one table",
                     span=keyword_span(sql, "RECURSIVE"))
    found = dict(outer)
    for cte in with_.expressions:
        body = cte.this
        if not isinstance(body, exp.Select):
            raise refuse("DP110", "a WITH body must be one row-level SELECT (no set operations)", body, sql,
                         "filter and derive columns in one SELECT over one table", span=keyword_span(sql, "WITH"))
        found[cte.alias.lower()] = body
    return found


def _relation(source: exp.Expr, ctes: dict[str, exp.Select], policy: Policy, sql: str, depth: int = 0) -> _Relation:
    if depth > 16:
        raise refuse("DP110", "derived tables are nested too deeply", source, sql, "nest at most 16 subqueries or CTEs")
    if isinstance(source, exp.Table):
        name = _plain_name(source)
        if name is not None and name in ctes:
            body = ctes[name]
            visible = {k: v for k, v in ctes.items() if k != name}  # a CTE never reads itself
            return _derived(body, visible, policy, sql, depth)
        base = _unqualify(source.copy(), policy, sql)
        # An unknown table gets resolve_table's refusal (DP103) from the flattened query; a
        # public table behind a derived relation makes the flattened query a public one.
        table = policy.table(base.name) if isinstance(base.this, exp.Identifier) else None
        names = list(table.columns) if table is not None else []
        bare = exp.Table(this=base.this.copy())
        return _Relation(base=bare, columns={n.lower(): [exp.column(n)] for n in names}, where=None,
                         hidden=frozenset(n.lower() for n in names))
    if isinstance(source, exp.Subquery):
        inner = _parenthesised(source)
        if not isinstance(inner, exp.Select):
            raise refuse("DP110", "set operations (UNION, INTERSECT, EXCEPT) are not accepted", inner, sql,
                         "ask one SELECT at a time", span=keyword_span(sql, "UNION"))
        return _derived(inner, ctes, policy, sql, depth)
    raise refuse("DP103", "a file path, function or subquery in FROM is outside the policy", source, sql,
                 "read a table declared in the policy by its name")


def _parenthesised(source: exp.Subquery) -> exp.Expr:
    """What a FROM item in parentheses stands for: `((SELECT ...)) AS t` is that SELECT (Power BI
    doubles the parentheses), `(people) AS t` and `((SELECT ...) AS a) AS t` are SELECT * from the
    inner item, and a parenthesised join `((SELECT ...) AS a JOIN b ON ...) AS t` is `SELECT *
    FROM (SELECT ...) AS a JOIN b ON ...` (Power BI's model relationships): a join, not a set
    operation."""
    inner = _unwrapped(source.this)
    if isinstance(inner, (exp.Subquery, exp.Table)):
        return _hoisted(exp.Select(expressions=[exp.Star()], from_=exp.From(this=inner.copy())))
    return inner


def _unwrapped(node: exp.Expr) -> exp.Expr:
    """`node` without parentheses that carry no name and no join."""
    while isinstance(node, exp.Subquery) and not node.alias and not node.args.get("joins"):
        node = node.this
    return node


def _hoisted(select: exp.Select) -> exp.Select:
    """A SELECT whose FROM item is a parenthesised join without a name (`FROM (a JOIN b ON ...)`,
    which sqlglot keeps as joins of the first operand) with that join as its own FROM and JOINs."""
    from_ = select.args.get("from_")
    if from_ is None:
        return select
    source = _unwrapped(from_.this)
    if not isinstance(source, (exp.Subquery, exp.Table)) or not source.args.get("joins"):
        return select
    first = source.copy()
    first.set("joins", None)
    hoisted = select.copy()
    hoisted.set("from_", exp.From(this=first))
    hoisted.set("joins", [j.copy() for j in source.args["joins"]] + [j.copy() for j in select.args.get("joins") or []])
    return hoisted


def _derived(body: exp.Select, ctes: dict[str, exp.Select], policy: Policy, sql: str, depth: int) -> _Relation:
    """The relation a row-level SELECT defines, in terms of its base table."""
    body = _hoisted(body)
    if body.args.get("order") is not None and body.args.get("limit") is None and body.args.get("offset") is None:
        # ORDER BY without LIMIT (a BI tool's saved SQL) orders rows the outer query reads as a
        # multiset: it changes nothing, so it is dropped (never run).
        body = body.copy()
        body.set("order", None)
    _check_row_level(body, sql)
    ctes = _ctes(body, sql, ctes)
    if body.args.get("joins"):
        # Row-level operands (Power BI's `(SELECT * FROM t AS [$Table]) AS [$Outer]`) become their
        # tables under the operands' names first, as in a join the analyst writes.
        return _joined(_flatten_join_operands(body, policy, sql, ctes), ctes, policy, sql)
    inner = body.args["from_"].this
    if isinstance(inner, exp.Table) and isinstance(inner.this, exp.Func):
        raise refuse("DP103", f"the table function {function_name(inner.this)}() is outside the policy", inner, sql,
                     "read a table declared in the policy by its name")
    relation = _relation(inner, ctes, policy, sql, depth + 1)
    names = _qualifiers(inner)
    columns: dict[str, list[exp.Expr]] = {}
    for item in body.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            if isinstance(item, exp.Column) and item.table.lower() not in names:
                raise UnknownColumnError(f"'{item.sql()}' refers to a table the subquery does not read", code="DP111",
                                         span=span_of(item, sql), sql=sql, hint="qualify columns with the table in FROM")
            star = item if isinstance(item, exp.Star) else item.this
            if any(star.args.values()):  # EXCLUDE, REPLACE, RENAME, COLUMNS(...): name the columns instead
                raise refuse("DP110", "SELECT * with EXCLUDE, REPLACE or RENAME is not accepted in a subquery", item, sql,
                             "list the columns the subquery exposes")
            for key, definitions in relation.columns.items():
                columns.setdefault(key, []).extend(d.copy() for d in definitions)
            continue
        name = item.alias if isinstance(item, exp.Alias) else item.name if isinstance(item, exp.Column) else ""
        expr = item.this if isinstance(item, exp.Alias) else item
        defined = _substitute_expr(expr.copy(), relation, names, sql, policy)
        if name:
            columns.setdefault(name.lower(), []).append(defined)
    where = body.args.get("where")
    combined = relation.where.copy() if relation.where is not None else None
    if where is not None:
        own = _substitute_expr(where.this.copy(), relation, names, sql, policy)
        combined = own if combined is None else _conjoin(combined, own)
    return _Relation(base=relation.base, columns=columns, where=combined, hidden=relation.hidden, joins=relation.joins)


def _joined(body: exp.Select, ctes: dict[str, exp.Select], policy: Policy, sql: str) -> _Relation:  # noqa: C901 - one pass over the body's joins; each case is a refusal with its own message
    """The relation of a row-level body that joins tables of the policy (Superset's virtual datasets
    and Metabase's nested questions over a join): its columns as columns of the joined tables,
    qualified by their names in the body, and the joins themselves, which the join analysis
    (analysis/joins.py) then judges in the flattened query like joins an analyst writes."""
    nodes = [body.args["from_"].this, *(j.this for j in body.args["joins"])]
    tables: list[tuple[str, list[str]]] = []  # (qualifier, the table's columns)
    for node in nodes:
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier) or \
                (_plain_name(node) in ctes and not node.args.get("db")):
            raise refuse("DP110", "a join reads tables of the policy by name, not subqueries or CTEs", node, sql,
                         "join the tables themselves and put the filters in WHERE")
        table = policy.table(_unqualify(node.copy(), policy, sql).name)
        if table is None:
            raise refuse("DP103", f"'{node.name}' is not a table of the policy", node, sql,
                         "read a table declared in the policy by its name")
        tables.append(((node.alias or node.name).lower(), list(table.columns)))
    columns: dict[str, list[exp.Expr]] = {}
    for item in body.expressions:
        star = item if isinstance(item, exp.Star) else item.this if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else None
        if star is not None:
            if any(star.args.values()):  # EXCLUDE, REPLACE, RENAME, COLUMNS(...): name the columns instead
                raise refuse("DP110", "SELECT * with EXCLUDE, REPLACE or RENAME is not accepted in a subquery", item, sql,
                             "list the columns the subquery exposes")
            named = item.table.lower() if isinstance(item, exp.Column) else None
            if named is not None and named not in {q for q, _ in tables}:
                raise UnknownColumnError(f"'{item.sql()}' refers to a table the subquery does not read", code="DP111",
                                         span=span_of(item, sql), sql=sql, hint="qualify columns with the table in FROM")
            for qualifier, names in tables:
                if named is None or named == qualifier:
                    for name in names:
                        columns.setdefault(name.lower(), []).append(exp.column(name, table=qualifier))
            continue
        name = item.alias if isinstance(item, exp.Alias) else item.name if isinstance(item, exp.Column) else ""
        defined = _qualified(item.this.copy() if isinstance(item, exp.Alias) else item.copy(), tables, sql)
        if name:
            columns.setdefault(name.lower(), []).append(defined)
    where = body.args.get("where")
    base = _unqualify(body.args["from_"].this.copy(), policy, sql)
    joins = []
    for join in body.args["joins"]:
        copied = join.copy()
        _unqualify(copied.this, policy, sql)
        for column in copied.find_all(exp.Column):  # `main.people.age` in ON -> `people.age`
            column.set("db", None)
            column.set("catalog", None)
        joins.append(copied)
    return _Relation(base=base, columns=columns, where=_qualified(where.this.copy(), tables, sql) if where is not None else None,
                     hidden=frozenset(n.lower() for _, names in tables for n in names), joins=tuple(joins))


def _qualified(expr: exp.Expr, tables: list[tuple[str, list[str]]], sql: str) -> exp.Expr:
    """Every column of `expr` qualified by the one joined table that has it (DP111 when none or
    several do, or when its qualifier names no joined table)."""
    for column in list(expr.find_all(exp.Column)):
        if isinstance(column.this, exp.Star):
            continue
        wanted = column.name.lower()
        if column.table:
            owners = [q for q, names in tables if q == column.table.lower()]
            if not owners:
                raise UnknownColumnError(f"'{column.sql()}' refers to a table the subquery does not read", code="DP111",
                                         span=span_of(column, sql), sql=sql, hint="qualify columns with the tables the subquery joins")
        else:
            owners = [q for q, names in tables if wanted in {n.lower() for n in names}]
            if len(owners) > 1:
                raise UnknownColumnError(f"column '{column.name}' is ambiguous: {' and '.join(owners)} both have it", code="DP111",
                                         span=span_of(column, sql), sql=sql, hint=f"write {owners[0]}.{column.name}")
        names = next((n for q, n in tables if q == (owners[0] if owners else "")), [])
        match = next((n for n in names if n.lower() == wanted), None)
        if match is None:
            raise UnknownColumnError(f"column '{column.name}' is not a column of the joined tables", code="DP111",
                                     span=span_of(column, sql), sql=sql, hint="columns of the tables the subquery joins")
        qualified = exp.column(match, table=owners[0])
        if column is expr:
            return qualified
        column.replace(qualified)
    return expr


def _qualifiers(source: exp.Expr) -> set[str]:
    """The names columns of a FROM item may be qualified with: its alias, and a table's name."""
    names = {source.alias.lower()} if source.alias else set()
    if isinstance(source, exp.Table):
        names.add(source.name.lower())
    return names


def _check_row_level(body: exp.Select, sql: str) -> None:
    """The body has one output row per input row, reads one FROM item and calls allowed functions."""
    for name, value in body.args.items():
        if value and name not in _ROW_LEVEL_ARGS and name != "joins":  # joins: _joined
            word = _CLAUSE_WORDS.get(name, name.upper())
            raise refuse("DP110", f"a subquery or CTE with {word} is not row-level: only projections, derived columns and "
                         "WHERE are accepted inside it", value if isinstance(value, exp.Expr) else None, sql,
                         "move aggregation, grouping, DISTINCT and LIMIT to the outer query",
                         span=keyword_span(sql, word.split()[0]))
    if body.args.get("from_") is None:
        raise refuse("DP103", "a subquery reads no table", body, sql, "add FROM <table> naming a table of the policy")
    if body.args["from_"].expressions:
        raise refuse("DP110", "a subquery reads one table", body.args["from_"], sql, "query one table at a time")
    _refuse_expression_subqueries(body, sql, semi_joins=True)
    window = body.find(exp.Window)
    if window is not None:  # one value per row computed over other rows (and other persons)
        raise refuse("DP110", "a subquery or CTE with a window function is not row-level: window functions compute "
                     "over private rows", window, sql, "use GROUP BY with aggregates in the outer query",
                     span=span_of(window, sql) or keyword_span(sql, "OVER"))
    for part in (*body.expressions, body.args.get("where")):
        if part is None:
            continue
        aggregate = next((f for f in part.find_all(exp.Func) if is_aggregate(f)), None)
        if aggregate is not None:
            raise refuse("DP110", f"a subquery or CTE with an aggregate ({function_name(aggregate).upper()}) is not "
                         "row-level: an aggregated query is post-processed only as a FROM item of an outer query",
                         aggregate, sql, "read it in the FROM of an outer query, or aggregate in the outer query")
    # The rules run on the flattened query, which keeps only the columns the outer query uses:
    # the functions and string sizes of every part of the body are checked here (DP113, DP125);
    # a semi- or anti-join's subquery by the join analysis, which reads it.
    checked = _without_semi_joins(body)
    check_functions(checked, sql)
    check_bounded_expressions(checked, sql)


def _refuse_expression_subqueries(select: exp.Select, sql: str, semi_joins: bool = False) -> None:
    """Subqueries inside expressions stay refused, but for `[NOT] EXISTS (...)` and `x [NOT] IN
    (SELECT ...)` in WHERE when `semi_joins` (the join analysis judges them in the flattened
    query, their own columns left to them: `_outer_columns`). Scalar subqueries have been released
    and replaced by parameters before this runs (analysis/scalar_subqueries.py)."""
    parts = [*select.expressions, *(select.args.get(k) for k in ("where", "group", "having", "order"))]
    for part in parts:
        if part is None:
            continue
        for node in part.find_all(exp.Subquery, exp.Select, exp.Union, exp.Exists):
            semi = isinstance(node, exp.Exists) or isinstance(node.parent, exp.In)
            inside = next((a for a in _ancestors(node, part) if isinstance(a, exp.Exists) or
                           (isinstance(a, exp.Subquery) and isinstance(a.parent, exp.In))), None)
            if semi_joins and part is select.args.get("where") and (semi or inside is not None):
                continue  # a semi- or anti-join (or a part of one): the join analysis judges it
            span = span_of(node, sql) or keyword_span(sql, "SELECT")
            if semi:
                raise refuse("DP110", "[NOT] EXISTS and IN (SELECT ...) are accepted in WHERE only, and not beside a "
                             "joined subquery or CTE", node, sql, "write the query over the tables of the policy themselves "
                             "(joins included), with the EXISTS or IN in its WHERE", span=span)
            raise refuse("DP110", SUBQUERY_REFUSED, node, sql, SUBQUERY_HINT, span=span)


def _without_semi_joins(body: exp.Select) -> exp.Select:
    """A copy of `body` with each [NOT] EXISTS and IN (SELECT ...) of its WHERE as TRUE."""
    where = body.args.get("where")
    if where is None or where.find(exp.Exists, exp.Subquery) is None:
        return body
    copy = body.copy()
    for node in list(copy.args["where"].find_all(exp.Exists, exp.In)):
        if isinstance(node, exp.Exists) or node.args.get("query") is not None:
            node.replace(exp.true())
    return copy


def _ancestors(node: exp.Expr, top: exp.Expr) -> list[exp.Expr]:
    found = []
    current = node.parent
    while current is not None and current is not top.parent:
        found.append(current)
        current = current.parent
    return found


def _unqualify(table: exp.Table, policy: Policy, sql: str) -> exp.Table:
    """A table name with an accepted schema (and catalog) prefix, without it (in place)."""
    db, catalog = table.args.get("db"), table.args.get("catalog")
    if db is not None and db.name.lower() not in SCHEMAS or catalog is not None and catalog.name.lower() not in CATALOGS:
        raise refuse("DP103", f"'{table.sql(dialect=Dpsql)}' is outside the policy: tables live in the schema main "
                     "(or public)", table, sql, "read a table declared in the policy, as people, main.people or public.people")
    table.set("db", None)
    table.set("catalog", None)
    return table


def _unqualify_columns(select: exp.Select, sql: str) -> None:
    """`main.people.age` -> `people.age` (the rules check the table qualifier)."""
    for column in select.find_all(exp.Column):
        db, catalog = column.args.get("db"), column.args.get("catalog")
        if db is not None and db.name.lower() not in SCHEMAS or catalog is not None and catalog.name.lower() not in CATALOGS:
            raise UnknownColumnError(f"'{column.sql()}' refers to a table the query does not read", code="DP111",
                                     span=span_of(column, sql), sql=sql, hint="qualify columns with the table in FROM")
        column.set("db", None)
        column.set("catalog", None)


def _keep_output_names(select: exp.Select) -> None:
    """Unaliased outputs keep the name the analyst sees (the derived column's, not its definition's)."""
    for item in list(select.expressions):
        if isinstance(item, exp.Alias):
            continue
        if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            continue
        name = item.name if isinstance(item, exp.Column) else item.sql(dialect=Dpsql)
        item.replace(exp.alias_(item.copy(), exp.to_identifier(name, quoted=True)))


def _substitute(select: exp.Select, relation: _Relation, names: set[str], sql: str, policy: Policy) -> None:
    """Each column of the outer query replaced by its definition over the base table, in place
    (not the own columns of an EXISTS or IN subquery in its WHERE)."""
    aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
    for column in _outer_columns(select, policy):
        if isinstance(column.this, exp.Star):
            continue
        replacement = _definition(column, relation, names, sql, aliases)
        if replacement is not None:
            column.replace(_seen_from(replacement, column, select, relation))


def _substitute_expr(expr: exp.Expr, relation: _Relation, names: set[str], sql: str, policy: Policy) -> exp.Expr:
    for column in _outer_columns(expr, policy):
        if isinstance(column.this, exp.Star):
            continue
        replacement = _definition(column, relation, names, sql, set())
        if replacement is not None:
            if column is expr:
                return replacement
            column.replace(_seen_from(replacement, column, expr, relation))
    return expr


def _seen_from(definition: exp.Expr, column: exp.Column, root: exp.Expr, relation: _Relation) -> exp.Expr:
    """A definition that replaces an outer column inside an EXISTS or IN subquery, its columns
    qualified by the base table's name: unqualified, the subquery's own table would capture a
    column it also has (`v.person_id = p.person_id` must stay a correlation)."""
    node = column.parent
    while node is not None and node is not root and not isinstance(node, exp.Select):
        node = node.parent
    if node is None or node is root:
        return definition
    for found in [definition] if isinstance(definition, exp.Column) else list(definition.find_all(exp.Column)):
        if not found.table and not isinstance(found.this, exp.Star):
            qualified = exp.column(found.name, table=relation.base.name)
            if found is definition:
                return qualified
            found.replace(qualified)
    return definition


def _definition(column: exp.Column, relation: _Relation, names: set[str], sql: str, aliases: set[str]) -> exp.Expr | None:
    """The definition of a column reference, or None for an output alias (HAVING, ORDER BY, GROUP BY)."""
    db, catalog = column.args.get("db"), column.args.get("catalog")
    foreign = db is not None and db.name.lower() not in SCHEMAS or catalog is not None and catalog.name.lower() not in CATALOGS
    if foreign or (column.table and column.table.lower() not in names):
        raise UnknownColumnError(f"'{column.sql()}' refers to a table the query does not read", code="DP111",
                                 span=span_of(column, sql), sql=sql, hint="qualify columns with the name of the subquery or CTE")
    definitions = relation.columns.get(column.name.lower())
    if definitions is None:
        in_clause = column.find_ancestor(exp.Where, exp.AggFunc, exp.Having, exp.Order, exp.Group)
        if not column.table and column.name.lower() in aliases and isinstance(in_clause, (exp.Having, exp.Order, exp.Group)):
            if column.name.lower() in relation.hidden:
                raise UnknownColumnError(f"the output name '{column.name}' is also a column of the base table that the "
                                         "subquery does not expose", code="DP111", span=span_of(column, sql), sql=sql,
                                         hint="give the output another name")
            return None
        known = ", ".join(sorted(relation.columns)) or "none"
        raise UnknownColumnError(f"column '{column.name}' is not a column of the subquery or CTE", code="DP111",
                                 span=span_of(column, sql), sql=sql, hint=f"columns it exposes: {known}")
    if len(definitions) > 1:
        raise UnknownColumnError(f"column '{column.name}' is ambiguous: the subquery defines it twice", code="DP111",
                                 span=span_of(column, sql), sql=sql, hint="give each derived column its own name")
    definition = definitions[0].copy()
    return definition

