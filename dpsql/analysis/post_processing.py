"""Post-processing over released results: outer queries, UNION ALL, grouping sets -> PostQuery.

Each aggregated SELECT that reads a private table (directly, or through row-level subqueries
and CTEs) is a *release*: it is analysed, planned and charged like the query it is, on its own.
Everything above the releases (the outer query: WHERE/HAVING on noisy values, ORDER BY, LIMIT,
arithmetic, window functions, UNION ALL of several releases) is rewritten to read the released
tables by name, and public tables of the policy (their rows are read exactly and free, and
passed in beside the released rows: Metabase's public rows LEFT JOIN a saved question, TPC-H
Q15's supplier rows beside its revenue release): a private table or a row-level relation over
one met there is refused (DP126) before any data is read. Execution then computes the
releases (noise added) first and runs the outer query in a separate database that holds the
released rows and those public rows only (backend/auxiliary/released_db.py). GROUP BY ROLLUP / CUBE / GROUPING SETS is one release per
grouping set (the query's epsilon and delta split evenly across the sets) and a UNION ALL
with NULL for the rolled-up keys; its additive aggregates are then reconciled so that totals
equal the sum of their parts (GroupingSets, execution/consistency.py), unless OPTIONS
(consistent = false).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from fractions import Fraction

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify

from dpsql.analysis.context import AnalysisContext, refuse
from dpsql.analysis.function_arguments import check_bounded_expressions
from dpsql.analysis.functions import FORBIDDEN_NAMES, function_name, is_aggregate
from dpsql.analysis.per_unit import per_unit_query
from dpsql.analysis.post_functions import check_outer_functions
from dpsql.analysis.released_keys import KeyJoin, key_join
from dpsql.analysis.rules import CATALOGS, SCHEMAS, public_tables
from dpsql.analysis.scalar_subqueries import (
    ACCEPTED,
    check_scalar,
    correlated,
    outer_reference,
    parameter_name,
    parameter_type,
    placeholder,
    post_scalars,
    public_type,
    scalar_subqueries,
    within,
)
from dpsql.analysis.window_lift import lift_windows, output_name, windows_over_groups
from dpsql.catalog.policy import Table
from dpsql.errors import CatalogError, InvalidOptionError, UnknownColumnError
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.frontend.spans import keyword_span, span_of
from dpsql.ir.post_query import (
    PUBLIC_PREFIX,
    RELEASED_PREFIX,
    GroupingSets,
    OutputLineage,
    PostQuery,
    PublicInput,
    ReleasedInput,
    ScalarParameter,
    public_name,
    released_column,
    released_name,
)
from dpsql.ir.query import BoundQuery, PublicQuery

MAX_GROUPING_SETS = 16
MAX_RELEASES = 32
MAX_PUBLIC_TABLES = 8  # public tables one outer query may read (each read whole, its rows capped at run time)
AnalyzeSelect = Callable[[exp.Select, AnalysisContext], "BoundQuery | PublicQuery"]
_GROUPING_NODES = (exp.Rollup, exp.Cube, exp.GroupingSets)


def needs_post(tree: exp.Expr) -> bool:
    """Whether `tree` is a post-processing shape: a set operation, grouping sets, or a SELECT
    that reads an aggregated subquery or CTE. Other shapes keep the one-SELECT path."""
    if isinstance(tree, exp.SetOperation):
        return True
    if not isinstance(tree, exp.Select):
        return False
    if _grouping_sets(tree) or windows_over_groups(tree):  # windows over its own groups: analysis/window_lift.py
        return True
    ctes = _cte_bodies(tree, {})
    # A CTE that holds a release, read or not (an unread one is dropped, never run or charged).
    return any(_releases_in(source, ctes) for source in _sources(tree)) or any(_releases_in(cte, ctes) for cte in ctes.values())


def analyze_post(tree: exp.Query, ctx: AnalysisContext, analyze_select: AnalyzeSelect) -> PostQuery:
    """The releases and the outer query of a post-processing shape (refusals before any data)."""
    rewriter = _Rewriter(ctx, analyze_select)
    if isinstance(tree, exp.Select) and tree.args.get("hint") is not None and not _is_leaf(tree, _cte_bodies(tree, {})):
        rewriter.hint = tree.args["hint"]
        tree = tree.copy()
        tree.set("hint", None)
    rewriter.root = tree
    outer = rewriter.query(tree, _Scope({}, {}))
    _check_reads(outer, {i.name for i in rewriter.inputs} | set(rewriter.public), ctx, rewriter)
    check_outer_functions(outer, ctx.sql)  # no row or list generators over released rows (DP113)
    if rewriter.hint is not None and rewriter.hint_receivers > 1:
        raise InvalidOptionError("OPTIONS on the outer query would apply to several aggregated queries", code="DP120",
                                 span=keyword_span(ctx.sql, "OPTIONS"), sql=ctx.sql,
                                 hint="put WITH DIFFERENTIAL_PRIVACY OPTIONS (...) in each aggregated SELECT")
    inputs = tuple(rewriter.inputs)
    public = tuple(rewriter.public.values())
    schema: dict[str, object] = {i.name: {released_column(j): "DOUBLE" for j in range(len(i.query.outputs))} for i in inputs}
    schema.update({p.name: dict.fromkeys(p.columns, "VARCHAR") for p in public})  # names only: qualify reads no type
    lineage = _lineage(outer, schema, inputs, ctx, frozenset(rewriter.public))
    kinds = " + ".join(dict.fromkeys(rewriter.kinds)) or "outer query"
    return PostQuery(sql=ctx.sql, kind=kinds, inputs=inputs, outer=outer, lineage=lineage, notes=tuple(rewriter.notes),
                     grouping=tuple(rewriter.grouping), public=public, parameters=tuple(rewriter.parameters))


# --- shapes ------------------------------------------------------------------------------------------


def _grouping_sets(select: exp.Select) -> bool:
    """ROLLUP, CUBE or GROUPING SETS in GROUP BY, or GROUPING() over a plain GROUP BY (one set)."""
    group = select.args.get("group")
    if group is None:
        return False
    return any(isinstance(e, _GROUPING_NODES) for e in group.expressions) or \
        any(item.find(exp.Grouping, exp.GroupingId) is not None for item in select.expressions)


def _sources(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_")
    found: list[exp.Expr] = []
    if from_ is not None:
        found.append(from_.this)
        found.extend(from_.expressions or [])
    found.extend(join.this for join in select.args.get("joins") or [])
    return found


def _cte_bodies(select: exp.Select, outer: dict[str, exp.Expr]) -> dict[str, exp.Expr]:
    with_ = select.args.get("with_")
    if with_ is None:
        return outer
    found = dict(outer)
    for cte in with_.expressions:
        found[cte.alias.lower()] = cte.this
    return found


def _table_name(table: exp.Table) -> str | None:
    return table.name.lower() if isinstance(table.this, exp.Identifier) and not table.args.get("db") else None


def _aggregated(select: exp.Select) -> bool:
    """GROUP BY, HAVING or an aggregate call in the select list (not inside a window or subquery)."""
    if select.args.get("group") is not None or select.args.get("having") is not None:
        return True
    for item in select.expressions:
        for func in item.find_all(exp.Func):
            if is_aggregate(func) and func.find_ancestor(exp.Window, exp.Subquery, exp.Select) in (None, select) \
                    and not isinstance(func.parent, exp.Window):
                return True
    return False


def _releases_in(source: exp.Expr, ctes: dict[str, exp.Expr], depth: int = 0) -> bool:
    """Whether a FROM item (or query) holds an aggregated SELECT or a set operation."""
    if depth > 32:
        return False
    if isinstance(source, exp.Subquery):
        return _releases_in(source.this, ctes, depth + 1)
    if isinstance(source, exp.SetOperation):
        return True
    if isinstance(source, exp.Table):
        name = _table_name(source)
        body = ctes.get(name) if name is not None else None
        if body is None:
            return False
        visible = {k: v for k, v in ctes.items() if k != name}
        return _releases_in(body, visible, depth + 1)
    if isinstance(source, exp.Select):
        if _aggregated(source) or _grouping_sets(source):
            return True
        inner = _cte_bodies(source, ctes)
        return any(_releases_in(s, inner, depth + 1) for s in _sources(source))
    return False


def _is_leaf(select: exp.Select, ctes: dict[str, exp.Expr]) -> bool:
    """An aggregated SELECT whose FROM items hold no release: a DP release of its own."""
    inner = _cte_bodies(select, ctes)
    return _aggregated(select) and not any(_releases_in(s, inner) for s in _sources(select))


# --- the rewrite ------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Scope:
    """CTEs visible at a point: row-level ones (attached to releases) and release-bearing ones
    (kept in the outer query, rewritten when first read)."""

    row: dict[str, exp.CTE]
    post: dict[str, exp.CTE]


class _Rewriter:
    def __init__(self, ctx: AnalysisContext, analyze_select: AnalyzeSelect) -> None:
        self.ctx = ctx
        self.analyze_select = analyze_select
        self.inputs: list[ReleasedInput] = []
        self.kinds: list[str] = []
        self.notes: list[str] = []
        self.grouping: list[GroupingSets] = []
        self.set_positions: list[tuple[int | None, ...]] = []  # per grouping set: each item's released position
        self._released_at: dict[int, int] = {}
        self.hint: exp.Expr | None = None
        self.hint_receivers = 0
        self.rewritten: dict[int, exp.CTE] = {}  # id(CTE node of the analyst's tree) -> its outer version
        self.public: dict[str, PublicInput] = {}  # the post-processing database's name -> a public table read
        self.root: exp.Expr | None = None  # the statement (the analysis' copy)
        self.parameters: list[ScalarParameter] = []  # scalar subqueries released first (analysis/scalar_subqueries.py)
        # A scalar subquery's text and the CTEs it may read -> its parameter, or (in an outer query
        # over releases) its rewritten query: one release however often a statement writes it or a
        # release reads it (a CTE read twice, each grouping set, SELECT and HAVING).
        self._scalars: dict[tuple[str, tuple[tuple[str, int], ...]], ScalarParameter] = {}
        self._post_scalars: dict[tuple[str, tuple[tuple[str, int], ...]], exp.Query] = {}
        self._releasing: set[tuple[str, tuple[tuple[str, int], ...]]] = set()  # being released (a cycle guard)

    def refuse_read(self, node: exp.Expr, what: str) -> Exception:
        return refuse("DP126", f"{what} beside released results: the outer query of a post-processing query reads "
                      "the aggregated subqueries, CTEs and UNION ALL branches, and public tables, only", node, self.ctx.sql,
                      "aggregate that table in its own subquery, e.g. FROM (SELECT dept, COUNT(*) AS n FROM people "
                      "GROUP BY dept) AS t, and filter, order or combine t outside it")

    # A query in a post-processing position -> its outer version (over released tables).
    def query(self, node: exp.Expr, scope: _Scope, role: str = "subquery") -> exp.Query:
        if isinstance(node, exp.Subquery):
            return self.query(node.this, scope, role)
        if isinstance(node, exp.SetOperation):
            return self._set_operation(node, scope)
        if not isinstance(node, exp.Select):
            raise self.refuse_read(node, "a statement that is not a SELECT")
        if windows_over_groups(node) and not _grouping_sets(node):
            lifted = lift_windows(node)  # an outer query over the aggregated query (windows lifted out)
            if lifted is not None:
                self.notes.append("window functions over the query's aggregates run over the released groups "
                                  "(post-processing)")
                return self.query(lifted, scope, role)
        scope = self._with(node, scope)
        visible = {**{k: c.this for k, c in scope.row.items()}, **{k: c.this for k, c in scope.post.items()}}
        if _grouping_sets(node) and not any(_releases_in(s, visible) for s in _sources(node)):
            return self._grouping_sets(node, scope)
        if _aggregated(node) and not _grouping_sets(node):  # an aggregate over a per-person aggregate (analysis/per_unit.py)
            per_unit = per_unit_query(node, visible, list(scope.row.values()), self.ctx, self.analyze_select)
            if per_unit is not None:
                self.kinds.append("per-person aggregate")
                self.notes.append(per_unit.note)
                return self._release(per_unit.select, scope, role, per_unit.ctx)
        lifted = self._lift_scalars(node, visible)
        if lifted is not None:
            return self.query(lifted, scope, role)
        if _is_leaf(node, visible):
            return self._leaf(node, scope, role, visible)
        joined = key_join(node, lambda s: _releases_in(s, visible), self.ctx.sql) \
            if _aggregated(node) and not _grouping_sets(node) and not self._only_public_beside(node, visible) else None
        if joined is not None:  # private rows for released keys (analysis/released_keys.py)
            return self._key_join(joined, scope, node)
        return self._post_select(node, scope)

    def _leaf(self, node: exp.Select, scope: _Scope, role: str, visible: dict[str, exp.Expr]) -> exp.Query:
        """An aggregated SELECT whose FROM items hold no release: a release, or over public tables
        only an aggregate of public rows (and released values) in the outer query: exact, free."""
        if self._only_public_beside(node, visible):
            return self._post_select(node, scope)
        return self._release(node, scope, role)

    def _set_operation(self, node: exp.SetOperation, scope: _Scope) -> exp.Query:
        """UNION ALL; UNION, INTERSECT and EXCEPT over released rows are post-processing too."""
        self.kinds.append("UNION ALL" if isinstance(node, exp.Union) and not node.args.get("distinct") else "set operation")
        new = node.copy()
        new.set("with_", None)
        branches = _branches(node)
        if len(branches) > MAX_RELEASES:
            raise refuse("DP129", f"a query of {len(branches)} UNION branches", node, self.ctx.sql,
                         f"combine at most {MAX_RELEASES} aggregate queries in one statement")
        scope = self._with(node, scope)  # WITH ... SELECT ... UNION ALL SELECT ...: the CTEs of both
        new.set("this", self.query(node.this, scope, role="UNION ALL branch"))
        new.set("expression", self.query(node.expression, scope, role="UNION ALL branch"))
        self._attach_ctes(node, new)
        self._check_clauses(new)
        return new

    def _with(self, select: exp.Query, scope: _Scope) -> _Scope:
        with_ = select.args.get("with_")
        if with_ is None:
            return scope
        if with_.args.get("recursive"):
            raise refuse("DP110", "WITH RECURSIVE is not accepted", with_, self.ctx.sql, "write a WITH over one table",
                         span=keyword_span(self.ctx.sql, "RECURSIVE"))
        row, post = dict(scope.row), dict(scope.post)
        for cte in with_.expressions:
            name = cte.alias.lower()
            row.pop(name, None)
            post.pop(name, None)
            bodies = {**{k: c.this for k, c in row.items()}, **{k: c.this for k, c in post.items()}}
            if _releases_in(cte.this, bodies) or isinstance(cte.this, exp.SetOperation):
                post[name] = cte
            else:
                row[name] = cte
        return _Scope(row, post)

    def _release(self, select: exp.Select, scope: _Scope, role: str, ctx: AnalysisContext | None = None) -> exp.Query:
        leaf = select.copy()
        # The release sees the row-level CTEs in scope; CTEs holding releases are the outer query's.
        leaf.set("with_", exp.With(expressions=[c.copy() for c in scope.row.values()]) if scope.row else None)
        read = self._parameterize(leaf, scope)  # its scalar subqueries, released first
        if self.hint is not None and leaf.args.get("hint") is None:
            leaf.set("hint", self.hint.copy())
            self.hint_receivers += 1
        bound = self._bind(leaf, names_matter=role.startswith(("subquery", "CTE")), ctx=ctx)
        if read:
            role = ("the query" if select is self.root else role) + f", reading {', '.join('$' + n for n in read)}"
        self._add(bound, leaf, role)
        # The released table's columns are positional (__c0, __c1, ...); the outer query sees the
        # outputs' own names, as if it read the aggregated query itself.
        columns = [exp.alias_(exp.column(released_column(j)), exp.to_identifier(o.name, quoted=True))
                   for j, o in enumerate(bound.outputs)]
        return exp.select(*columns).from_(exp.Table(this=exp.to_identifier(self.inputs[-1].name)))

    def _bind(self, leaf: exp.Select, names_matter: bool = False, ctx: AnalysisContext | None = None) -> BoundQuery:
        if len(self.inputs) >= MAX_RELEASES:
            raise refuse("DP129", f"more than {MAX_RELEASES} releases in one statement", leaf, self.ctx.sql,
                         "split the statement into several queries")
        bound = self.analyze_select(leaf, ctx if ctx is not None else self.ctx)
        if isinstance(bound, PublicQuery):
            raise self.refuse_read(leaf, "an aggregate over a public table")
        names = [o.name.lower() for o in bound.outputs]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None and names_matter:  # a UNION branch's names are not read (the first branch names the columns)
            raise refuse("DP128", f"the aggregated query names two outputs '{twice}': the outer query could not tell "
                         "them apart", leaf, self.ctx.sql, "give each output of the aggregated query its own alias (AS name)",
                         span=span_of(leaf.expressions[0], self.ctx.sql))
        return bound

    def _add(self, bound: BoundQuery, leaf: exp.Select, role: str) -> None:
        name = released_name(len(self.inputs))
        text = " ".join(leaf.sql(dialect=Dpsql).split())
        self.inputs.append(ReleasedInput(name=name, query=bound, text=text, role=role))

    # --- scalar subqueries (analysis/scalar_subqueries.py) ----------------------------------------------
    def _lift_scalars(self, node: exp.Select, visible: dict[str, exp.Expr]) -> exp.Select | None:
        """An aggregated query with scalar subqueries in SELECT, HAVING or ORDER BY (over released
        values): the outer query over its release, which keeps them (each a release of its own)."""
        if not _is_leaf(node, visible) or _grouping_sets(node):
            return None
        post = post_scalars(node)
        if not post:
            return None
        for sub in post:
            check_scalar(sub, self.root or node, self.ctx.policy, self.ctx.sql, _aggregated)
        lifted = lift_windows(node, lambda body: any(within(sub, body) for sub in post))
        if lifted is None:
            raise refuse("DP110", "a scalar subquery in SELECT, HAVING or ORDER BY is compared with released values: the "
                         "expression around it may read aggregates and GROUP BY keys only", post[0], self.ctx.sql,
                         "e.g. SELECT dept, COUNT(*) - (SELECT COUNT(*) / 12 FROM people) FROM people GROUP BY dept")
        self.kinds.append("scalar subquery")
        self.notes.append("a scalar subquery in SELECT, HAVING or ORDER BY reads released values: the aggregated query is "
                          "released, then the outer query combines it with the subquery's own release (post-processing)")
        return lifted

    def _parameterize(self, leaf: exp.Select, scope: _Scope) -> list[str]:
        """Each scalar subquery of a release (its WHERE, aggregate arguments, key expressions, row-level
        subqueries and CTEs): released first, once per subquery of the statement, then replaced in
        place by its typed engine parameter. Returns the parameters the release reads."""
        if not scalar_subqueries(leaf):
            return []
        with_ = leaf.args.get("with_")
        if with_ is not None:  # a CTE the release does not read is not its business (nor its subqueries)
            read_ctes = _read_ctes(leaf, {cte.alias.lower(): cte.this for cte in with_.expressions})
            kept = [c for c in with_.expressions if c.alias.lower() in read_ctes or not scalar_subqueries(c.this)]
            leaf.set("with_", exp.With(expressions=kept) if kept else None)
        for item in list(leaf.expressions):  # an output keeps the name the analyst wrote
            if not isinstance(item, exp.Alias) and scalar_subqueries(item):
                item.replace(exp.alias_(item.copy(), exp.to_identifier(output_name(item), quoted=True)))
        post = post_scalars(leaf)
        read: list[str] = []
        for sub in scalar_subqueries(leaf):
            if any(sub is p for p in post):
                raise refuse("DP110", "a scalar subquery in SELECT, HAVING or ORDER BY of this query (grouping sets, a "
                             "per-person aggregate) is not accepted", sub, self.ctx.sql,
                             "compare it in an outer query: SELECT * FROM (SELECT ...) AS t WHERE t.n > (SELECT ...)")
            parameter = self._scalar(sub, scope)
            sub.replace(placeholder(parameter.name, parameter.type))
            if parameter.name not in read:
                read.append(parameter.name)
        return read

    def _scalar(self, sub: exp.Subquery, scope: _Scope) -> ScalarParameter:
        """The parameter of a scalar subquery that meets rows, its release added (once)."""
        token = _scalar_key(sub, scope)
        if token in self._scalars:
            return self._scalars[token]
        sql = self.ctx.sql
        if token in self._releasing:  # the subquery reads itself (through a CTE)
            raise refuse("DP110", "a scalar subquery that reads its own result is not accepted", sub, sql, ACCEPTED)
        self._releasing.add(token)
        body = check_scalar(sub, self.root or sub, self.ctx.policy, sql, _aggregated)
        visible = {**{k: c.this for k, c in scope.row.items()}, **{k: c.this for k, c in scope.post.items()}}
        if public_tables(body, self.ctx) is not None:  # public rows only: read exactly, free (no release)
            return self._public_scalar(sub, body, token)
        if not _is_leaf(body, visible):
            raise refuse("DP110", "a scalar subquery over aggregated results is not accepted where it meets rows", sub, sql,
                         "aggregate the rows themselves in the subquery: (SELECT AVG(income) FROM people)")
        text = " ".join(sub.sql(dialect=Dpsql).split())
        self._release(body, scope, "scalar subquery")
        kind = parameter_type(self.inputs[-1].query)
        if kind is None:
            raise refuse("DP110", "the scalar subquery's value is neither one aggregate nor arithmetic over numeric "
                         "aggregates: dpsql cannot type it before it is released", sub, sql,
                         "select one aggregate, e.g. (SELECT AVG(income) FROM people) or (SELECT MEDIAN(hired) FROM people)")
        source = len(self.inputs) - 1
        parameter = ScalarParameter(parameter_name(len(self.parameters)), kind, source, text)
        self.parameters.append(parameter)
        self._scalars[token] = parameter
        self.kinds.append("scalar subquery")
        self.notes.append(f"the scalar subquery {text} is released first (release {source + 1}); the answers that "
                          "read it are for its released value, not the exact one, and so are their intervals; a NULL value "
                          "(⊥, or no row) keeps no row in a comparison")
        return parameter

    def _public_scalar(self, sub: exp.Subquery, body: exp.Select, token: tuple[str, tuple[tuple[str, int], ...]]) -> ScalarParameter:
        """A scalar subquery over public tables only that meets private rows: an exact public query,
        read before the releases (public rows are free), whose value is a typed engine parameter."""
        sql = self.ctx.sql
        query = self.analyze_select(body.copy(), self.ctx)
        kind = public_type(query.tree, query.tables) if isinstance(query, PublicQuery) else None
        if not isinstance(query, PublicQuery) or kind is None:
            raise refuse("DP110", "dpsql cannot type this scalar subquery over public tables", sub, sql,
                         "select one aggregate of a public column, e.g. (SELECT MAX(floor) FROM depts)")
        text = " ".join(sub.sql(dialect=Dpsql).split())
        parameter = ScalarParameter(parameter_name(len(self.parameters)), kind, None, text, public=query)
        self.parameters.append(parameter)
        self._scalars[token] = parameter
        self.kinds.append("scalar subquery")
        self.notes.append(f"the scalar subquery {text} reads public tables only: its exact value is read first (no noise, "
                          "no cost) and compared as a constant; a NULL value (no row) keeps no row in a comparison")
        return parameter

    def _post_select(self, select: exp.Select, scope: _Scope) -> exp.Select:
        new = select.copy()
        new.set("with_", None)
        self._check_functions(new)
        for source in _sources(new):
            self._source(source, scope)
        _unqualified(new)  # public.products.id -> products.id (the public table keeps its name as alias)
        # Subqueries in expressions (WHERE n > (SELECT AVG(n) FROM t), IN (...), EXISTS (...)):
        # each a query of its own.
        visible = {**{k: c.this for k, c in scope.row.items()}, **{k: c.this for k, c in scope.post.items()}}
        for sub in list(new.find_all(exp.Subquery, exp.Exists)):
            if sub.find_ancestor(exp.Select) is new and not _is_source(sub, new) and isinstance(sub.this, exp.Query):
                if isinstance(sub.this, exp.Select) and _is_leaf(sub.this, visible):  # a release: its own rows only
                    outer = outer_reference(sub.this, self.root or new, self.ctx.policy)
                    if outer is not None:
                        raise correlated(outer, self.ctx.sql)
                    if public_tables(sub.this, self.ctx) is not None:  # public rows only: read exactly, beside the releases
                        sub.set("this", self._post_select(sub.this, scope))
                        continue
                key = _scalar_key(sub, scope)
                if key not in self._post_scalars:
                    self._post_scalars[key] = self.query(sub.this, scope, "scalar subquery")
                sub.set("this", self._post_scalars[key].copy())
        self._attach_ctes(select, new)
        self.kinds.append("outer query")
        return new

    def _key_join(self, joined: KeyJoin, scope: _Scope, original: exp.Select) -> exp.Query:
        """Two releases: the joined aggregate (its keys), then the outer aggregate over all its
        groups; the outer query keeps the groups whose key was released."""
        source = joined.released
        if isinstance(source, exp.Table):  # a CTE's name: released once, however often it is read
            self._cte_reference(source.name.lower(), scope)
            keys: exp.Query = exp.select("*").from_(exp.Table(this=exp.to_identifier(source.name)))
        else:
            keys = self.query(source, scope, f"subquery {joined.alias}")
        rows = self.query(joined.rows, scope, "subquery (the outer aggregate, every group)")
        self.kinds.append("released keys")
        self.notes.append(f"the join with {joined.alias} keeps the groups whose key it released: the outer aggregate "
                          "is released for every group, then filtered by those keys (post-processing)")
        outer = joined.outer(keys, rows)
        self._attach_ctes(original, outer)
        return outer

    def _attach_ctes(self, original: exp.Expr, new: exp.Expr) -> None:
        """The query's own CTEs that were read (here or in a nested query), each released once."""
        own = original.args["with_"].expressions if original.args.get("with_") else []
        used = [self.rewritten[id(c)] for c in own if id(c) in self.rewritten]
        if used:
            new.set("with_", exp.With(expressions=used))

    def _source(self, source: exp.Expr, scope: _Scope) -> None:
        if isinstance(source, exp.Subquery):
            source.set("this", self.query(source.this, scope, f"subquery {source.alias}".strip()))
            return
        if isinstance(source, exp.Table):
            if isinstance(source.this, exp.Func) or not isinstance(source.this, exp.Identifier):
                raise self.refuse_read(source, "a table function")
            name = _table_name(source)
            if name is not None and name in scope.post:
                self._cte_reference(name, scope)
                return
            table = None if name in scope.row else self._public_table(source)
            if table is not None:
                self._read_public(source, table)
                return
            what = "a private row-level relation" if name is not None and name in scope.row else \
                "a table or subquery read without aggregation"
            if name is not None and name.startswith((RELEASED_PREFIX, PUBLIC_PREFIX)):
                what = "a reserved name"
            raise self.refuse_read(source, what)
        raise self.refuse_read(source, "a FROM item")

    def _public_table(self, source: exp.Table) -> Table | None:
        """The policy's PUBLIC table a FROM item names (plain or in the default schema), else None."""
        db, catalog = source.args.get("db"), source.args.get("catalog")
        if not isinstance(source.this, exp.Identifier) or (db is not None and db.name.lower() not in SCHEMAS) \
                or (catalog is not None and catalog.name.lower() not in CATALOGS):
            return None
        table = self.ctx.policy.table(source.name)
        return table if table is not None and table.public else None

    def _only_public_beside(self, select: exp.Select, visible: dict[str, exp.Expr]) -> bool:
        """Whether every FROM item of `select` that holds no release is a public table: an
        aggregate over released and public rows is post-processing, not released keys."""
        ctes = set(visible)
        return all(_releases_in(s, visible) or (isinstance(s, exp.Table) and _table_name(s) not in ctes
                                                and self._public_table(s) is not None) for s in _sources(select))

    def _read_public(self, source: exp.Table, table: Table) -> None:
        """A public table beside released results: its declared columns are read exactly (free)
        and handed to the post-processing database under a name of its own; the outer query
        keeps the name it used (its alias, else the table's name). Public rows carry no privacy
        cost; a private table never gets here (the policy says `public`)."""
        if not table.columns:
            raise CatalogError(f"table '{table.name}' declares no columns, and dpsql could not read them from its source",
                               code="DP002", span=span_of(source, self.ctx.sql), sql=self.ctx.sql,
                               hint=f"declare [tables.{table.name}.columns] in the policy")
        found = next((p for p in self.public.values() if p.table.name == table.name), None)
        if found is None:
            if len(self.public) >= MAX_PUBLIC_TABLES:
                raise refuse("DP129", f"more than {MAX_PUBLIC_TABLES} public tables beside released results", source,
                             self.ctx.sql, "join fewer public tables in the outer query")
            columns = tuple(table.columns)
            read = exp.select(*[exp.column(exp.to_identifier(c, quoted=True)) for c in columns]) \
                .from_(exp.Table(this=exp.to_identifier(table.name)))
            found = PublicInput(name=public_name(len(self.public)), table=table, read=read, columns=columns)
            self.public[found.name] = found
            self.notes.append(f"the public table {table.name} is read exactly (public rows, no cost) and joined with the "
                              "released rows in the post-processing database")
        alias = source.args.get("alias")
        alias = alias.copy() if alias is not None else exp.TableAlias(this=exp.to_identifier(source.name))
        source.set("this", exp.to_identifier(found.name))
        source.set("db", None)
        source.set("catalog", None)
        source.set("alias", alias)

    def _cte_reference(self, name: str, scope: _Scope) -> None:
        """A release-bearing CTE read by name: rewritten (and its releases added) once, however
        often it is read, so each of its releases is charged once."""
        cte = scope.post[name]
        if id(cte) in self.rewritten:
            return
        inner = _Scope(dict(scope.row), {k: v for k, v in scope.post.items() if k != name})
        self.rewritten[id(cte)] = exp.CTE(this=self.query(cte.this, inner, f"CTE {cte.alias}"), alias=cte.args["alias"].copy())

    def _check_functions(self, select: exp.Select) -> None:
        """The outer query runs over released rows in a database without file or network access;
        functions that read outside it are refused all the same (DP113), and sizes bounded (DP125)."""
        for func in select.find_all(exp.Func):
            name = function_name(func)
            if name in FORBIDDEN_NAMES and not is_aggregate(func):
                raise refuse("DP113", f"the function {name}() is not accepted", func, self.ctx.sql,
                             "post-process released columns with arithmetic, CASE, comparisons and window functions")
        check_bounded_expressions(select, self.ctx.sql)

    def _check_clauses(self, node: exp.Expr) -> None:
        for key in ("limit", "offset"):
            clause = node.args.get(key)
            value = clause.args.get("expression") if clause is not None else None
            if clause is not None and not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
                raise refuse("DP119", f"{key.upper()} must be a non-negative integer literal", clause, self.ctx.sql,
                             f"write {key.upper()} 10", span=keyword_span(self.ctx.sql, key.upper()))

    # --- grouping sets -----------------------------------------------------------------------------
    def _grouping_sets(self, select: exp.Select, scope: _Scope) -> exp.Query:  # noqa: C901 - being restructured in parallel (issue 26 item 2)
        sql = self.ctx.sql
        group = select.args["group"]
        sets = _expand(group, select, sql)
        if len(sets) > MAX_GROUPING_SETS:
            raise refuse("DP129", f"GROUP BY with {len(sets)} grouping sets", group, sql,
                         f"ask for at most {MAX_GROUPING_SETS} grouping sets (each is a release that shares the budget)",
                         span=keyword_span(sql, "GROUP"))
        if scalar_subqueries(select):  # one threshold for every set, released first
            select = select.copy()
            self._parameterize(select, scope)
        keys = list(dict.fromkeys(k for s in sets for k in s))
        items = list(select.expressions)
        names = [output_name(item) for item in items]
        having = select.args.get("having")
        if having is not None:
            bad = next((c for c in having.find_all(exp.Column) if c.find_ancestor(exp.AggFunc) is None), None) \
                or having.find(exp.Grouping, exp.GroupingId)
            if bad is not None:
                raise refuse("DP129", "HAVING on a group key or GROUPING() with grouping sets", bad, sql,
                             "filter keys in WHERE; HAVING may compare aggregates")
        order, hidden = self._set_order(select, items, names)
        visible = list(names)
        items = items + hidden
        names = names + [h.alias for h in hidden]
        first = len(self.set_positions)
        plans = [self._set_items(s, items, names, keys) for s in sets]
        positions = self.set_positions[first:]
        releasing = sum(1 for inner_items, _ in plans if inner_items)
        share = set_share(releasing) if releasing else Fraction(1)  # no release: constant rows only
        branches: list[exp.Select] = []
        self.kinds.append("grouping sets")
        released: list[int] = []
        for s, (inner_items, outer_items) in zip(sets, plans):
            if not inner_items:  # the empty set with no aggregate: one row of NULLs and GROUPING() bits, data-free
                branches.append(exp.select(*outer_items))
                continue
            inner = select.copy()
            for clause in ("order", "limit", "offset", "with_"):
                inner.set(clause, None)
            inner.set("expressions", inner_items)
            inner.set("group", exp.Group(expressions=[k.copy() for k in s]) if s else None)
            if scope.row:
                inner.set("with_", exp.With(expressions=[c.copy() for c in scope.row.values()]))
            if self.hint is not None and inner.args.get("hint") is None:
                inner.set("hint", self.hint.copy())
            bound = self._bind(inner)
            bound = dataclasses.replace(bound, budget=bound.budget.scale(share))
            label = "(" + ", ".join(k.sql(dialect=Dpsql) for k in s) + ")"
            self._add(bound, inner, f"grouping set {label}")
            released.append(len(self.inputs) - 1)
            branches.append(exp.select(*outer_items).from_(exp.Table(this=exp.to_identifier(self.inputs[-1].name))))
        if self.hint is not None and select.args.get("hint") is None:
            self.hint_receivers += 1
        self.notes.append(f"grouping sets: {releasing} release(s); the query's epsilon and delta are split evenly across "
                          "them (each person is in every set)")
        self.grouping.append(GroupingSets(
            inputs=tuple(released),
            keys=tuple(tuple(k.name.lower() for k in s) for s, (inner_items, _) in zip(sets, plans) if inner_items),
            positions=tuple(p for p, (inner_items, _) in zip(positions, plans) if inner_items),
            names=tuple(names), consistent=self._consistent(select)))
        combined: exp.Query = branches[0]
        for branch in branches[1:]:
            combined = exp.union(combined, branch, distinct=False)
        result = combined if len(branches) > 1 else branches[0]
        if hidden:  # drop the hidden ORDER BY items after ordering on them
            result = exp.select(*[exp.column(exp.to_identifier(n, quoted=True)) for n in visible]).from_(
                result.subquery("__sets"))
        if order is not None:
            result.set("order", order)
        for clause in ("limit", "offset"):
            if select.args.get(clause) is not None:
                result.set(clause, select.args[clause].copy())
        self._check_clauses(result)
        return result

    def _consistent(self, select: exp.Select) -> bool:
        """OPTIONS (consistent = ...) of the grouping-set query (or of the outer query's hint);
        bind.py checks it is a boolean when each set's release is bound."""
        for hint in (select.args.get("hint"), self.hint):
            for item in hint.expressions if hint is not None else ():
                if item.this.name.lower() == "consistent" and isinstance(item.expression, exp.Boolean):
                    return bool(item.expression.this)
        return True

    def _set_items(self, s: tuple[exp.Expr, ...], items: list[exp.Expr], names: list[str],
                   keys: list[exp.Expr]) -> tuple[list[exp.Expr], list[exp.Expr]]:
        """One grouping set's released items (the aggregated query's select list) and its outputs."""
        sql = self.ctx.sql
        outer_items: list[exp.Expr] = []
        inner_items: list[exp.Expr] = []
        self._released_at = {}
        for j, item in enumerate(items):
            body = item.this if isinstance(item, exp.Alias) else item
            alias = exp.to_identifier(names[j], quoted=True)
            if isinstance(body, (exp.Grouping, exp.GroupingId)):
                outer_items.append(exp.alias_(exp.Literal.number(_grouping_bits(body, s, sql)), alias))
                continue
            key = _key_of(body, keys)
            if key is not None and key not in s:
                outer_items.append(exp.alias_(exp.Null(), alias))
                continue
            value = body.copy()
            for column in list(value.find_all(exp.Column)):
                # (a column inside an aggregate, MEDIAN(x, b) and IQR(x) included, is an argument, not a key)
                inside = any(is_aggregate(node) for node in _ancestors(column))
                if not inside and _key_of(column, keys) not in (None, *s):
                    column.replace(exp.Null())
            if value.find(exp.Grouping, exp.GroupingId) is not None:
                raise refuse("DP129", "GROUPING() inside an expression", value.find(exp.Grouping, exp.GroupingId),
                             sql, "select GROUPING(...) on its own, as an output")
            self._released_at[j] = len(inner_items)
            position = released_column(len(inner_items))
            inner_items.append(exp.alias_(value, exp.to_identifier(position)))
            outer_items.append(exp.alias_(exp.column(position), alias))
        if not inner_items and s:
            # Only keys rolled up or GROUPING() selected: the set's keys are still released (which
            # groups exist), as hidden columns.
            inner_items = [exp.alias_(k.copy(), exp.to_identifier(released_column(p))) for p, k in enumerate(s)]
        self.set_positions.append(tuple(self._released_at.get(j) for j in range(len(items))))
        return inner_items, outer_items

    def _set_order(self, select: exp.Select, items: list[exp.Expr], names: list[str]) -> tuple[exp.Order | None, list[exp.Expr]]:
        """ORDER BY over the combined rows, and the hidden items it needs: an ORDER BY expression
        that is not an output (a key, an aggregate, GROUPING()) is computed per set like an output
        and ordered on, then dropped."""
        order = select.args.get("order")
        if order is None:
            return None, []
        out = []
        hidden: list[exp.Expr] = []
        bodies = [(item.this if isinstance(item, exp.Alias) else item).sql(dialect=Dpsql).lower() for item in items]
        for ordered in order.expressions:
            target = ordered.this
            new = ordered.copy()
            if isinstance(target, exp.Literal) and not target.is_string and target.this.isdigit() \
                    and 1 <= int(target.this) <= len(items):
                out.append(new)
                continue
            text = target.sql(dialect=Dpsql).lower()
            lowered = [n.lower() for n in names]
            if isinstance(target, exp.Column) and not target.table and target.name.lower() in lowered:
                index = lowered.index(target.name.lower())
            elif text in bodies:
                index = bodies.index(text)
            else:
                name = f"__order{len(hidden)}"
                hidden.append(exp.alias_(target.copy(), exp.to_identifier(name, quoted=True)))
                new.set("this", exp.column(exp.to_identifier(name, quoted=True)))
                out.append(new)
                continue
            new.set("this", exp.column(exp.to_identifier(names[index], quoted=True)))
            out.append(new)
        return exp.Order(expressions=out), hidden


def _unqualified(select: exp.Select) -> None:
    """Drop the default schema and catalog from the outer query's columns (`"public"."products"."id"`,
    as Metabase writes them): a public table is read under its name as an alias."""
    for column in select.find_all(exp.Column):
        db, catalog = column.args.get("db"), column.args.get("catalog")
        if db is not None and db.name.lower() in SCHEMAS and (catalog is None or catalog.name.lower() in CATALOGS):
            column.set("db", None)
            column.set("catalog", None)


def _check_reads(outer: exp.Query, released: set[str], ctx: AnalysisContext, rewriter: _Rewriter) -> None:
    """Second line: every table the outer query reads is a released table or one of its own CTEs."""
    ctes = {cte.alias.lower() for cte in outer.find_all(exp.CTE)}
    for table in outer.find_all(exp.Table):
        name = _table_name(table)
        if name is None or (name not in released and name not in ctes):
            raise rewriter.refuse_read(table, "a table or subquery read without aggregation")
    for func in outer.find_all(exp.Func):  # a table function in a position not caught above
        if isinstance(func.parent, exp.Table):
            raise rewriter.refuse_read(func, "a table function")


def set_share(count: int) -> Fraction:
    """Each grouping set's share of the query's epsilon and delta: every person is in every set,
    so the k sets compose sequentially and each gets 1/k (the statement costs the query's budget)."""
    return Fraction(1, count)


def _branches(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.SetOperation):
        return _branches(node.this) + _branches(node.expression)
    return [node]


def _scalar_key(sub: exp.Expr, scope: _Scope) -> tuple[str, tuple[tuple[str, int], ...]]:
    """A subquery's text and the CTEs its names may read: the same key, the same question."""
    ctes = {**scope.row, **scope.post}
    return " ".join(sub.sql(dialect=Dpsql).split()), tuple(sorted((name, id(cte)) for name, cte in ctes.items()))


def _read_ctes(select: exp.Select, ctes: dict[str, exp.Expr]) -> set[str]:
    """The names of the CTEs `select` reads, directly or through other CTEs."""
    found: set[str] = set()
    body = select.copy()
    body.set("with_", None)
    pending: list[exp.Expr] = [body]
    while pending:
        node = pending.pop()
        for table in node.find_all(exp.Table):
            name = _table_name(table)
            if name is not None and name in ctes and name not in found:
                found.add(name)
                pending.append(ctes[name])
    return found


def _is_source(sub: exp.Expr, select: exp.Select) -> bool:
    return any(sub is s for s in _sources(select))


def _key_of(node: exp.Expr, keys: list[exp.Expr]) -> exp.Expr | None:
    if not isinstance(node, exp.Column):
        return None
    return next((k for k in keys if isinstance(k, exp.Column) and k.name.lower() == node.name.lower()), None)


def _grouping_bits(func: exp.Expr, grouping_set: tuple[exp.Expr, ...], sql: str) -> int:
    """GROUPING(a, b, ...): one bit per argument, the first the most significant; 1 when the
    argument is rolled up (absent from the grouping set), as in SQL."""
    names = {k.name.lower() for k in grouping_set if isinstance(k, exp.Column)}
    bits = 0
    for arg in func.expressions:
        if not isinstance(arg, exp.Column):
            raise refuse("DP129", "GROUPING() takes group key columns", arg, sql, "write GROUPING(dept, region)")
        bits = bits * 2 + (0 if arg.name.lower() in names else 1)
    return bits


def _expand(group: exp.Group, select: exp.Select, sql: str) -> list[tuple[exp.Expr, ...]]:
    """The grouping sets of a GROUP BY: the cross product of its items' sets, in SQL's order."""
    lists: list[list[tuple[exp.Expr, ...]]] = []
    for item in group.expressions:
        lists.append(_item_sets(_by_position(item, select), sql))
    sets = []
    for combo in itertools.product(*lists):
        keys: list[exp.Expr] = []
        for part in combo:
            for key in part:
                if not any(k.name.lower() == key.name.lower() for k in keys):
                    keys.append(key)
        sets.append(tuple(keys))
    return sets


def _by_position(item: exp.Expr, select: exp.Select) -> exp.Expr:
    """GROUP BY 2 -> the column the second select item is (when it is one); else the item."""
    if isinstance(item, exp.Literal) and not item.is_string and item.this.isdigit() \
            and 1 <= int(item.this) <= len(select.expressions):
        target = select.expressions[int(item.this) - 1]
        body = target.this if isinstance(target, exp.Alias) else target
        return body if isinstance(body, exp.Column) else item
    return item


def _item_sets(item: exp.Expr, sql: str) -> list[tuple[exp.Expr, ...]]:
    if isinstance(item, exp.Rollup):
        columns = [_key_column(e, sql) for e in item.expressions]
        return [tuple(columns[:n]) for n in range(len(columns), -1, -1)]
    if isinstance(item, exp.Cube):
        columns = [_key_column(e, sql) for e in item.expressions]
        if len(columns) > 4:
            raise refuse("DP129", f"CUBE of {len(columns)} columns ({2 ** len(columns)} grouping sets)", item, sql,
                         f"CUBE at most 4 columns, or list the sets with GROUPING SETS (at most {MAX_GROUPING_SETS})")
        return [tuple(c for c, keep in zip(columns, mask) if keep)
                for mask in itertools.product((True, False), repeat=len(columns))]
    if isinstance(item, exp.GroupingSets):
        out: list[tuple[exp.Expr, ...]] = []
        for element in item.expressions:
            if isinstance(element, (exp.Rollup, exp.Cube)):
                out.extend(_item_sets(element, sql))
            elif isinstance(element, exp.Tuple):
                out.append(tuple(_key_column(e, sql) for e in element.expressions))
            elif isinstance(element, exp.Paren):
                inner = element.this
                out.append(tuple(_key_column(e, sql) for e in inner.expressions) if isinstance(inner, exp.Tuple)
                           else (_key_column(inner, sql),))
            else:
                out.append((_key_column(element, sql),))
        return out
    return [(_key_column(item, sql),)]


def _key_column(node: exp.Expr, sql: str) -> exp.Expr:
    if not isinstance(node, exp.Column):
        raise refuse("DP129", "grouping sets take group key columns", node, sql,
                     "write ROLLUP(dept, region), CUBE(dept, region) or GROUPING SETS ((dept), ()); to roll up an "
                     "expression, name it in a subquery: SELECT band, COUNT(*) FROM (SELECT age / 10 AS band FROM t) "
                     "GROUP BY ROLLUP (band)",
                     span=span_of(node, sql) or keyword_span(sql, "GROUP"))
    return node


# --- lineage ------------------------------------------------------------------------------------------


def _lineage(outer: exp.Query, schema: dict[str, object], inputs: tuple[ReleasedInput, ...],
             ctx: AnalysisContext, public: frozenset[str] = frozenset()) -> tuple[OutputLineage, ...] | None:
    """Per output column: pass-through or derived, and from which released columns. Unknown
    columns of the outer query are refused here (DP111), before any data is read."""
    columns = {(i, released_column(j)): j for i, inp in enumerate(inputs) for j in range(len(inp.query.outputs))}
    keys = {(i, j): o.key is not None for i, inp in enumerate(inputs) for j, o in enumerate(inp.query.outputs)}
    index = {inp.name: i for i, inp in enumerate(inputs)}
    direct = _union_lineage(outer, index, columns, keys)
    if direct is not None:
        return direct
    try:
        qualified = qualify(outer.copy(), schema=schema, dialect="duckdb", validate_qualify_columns=True,
                            quote_identifiers=False, identify=False)
    except SqlglotError as err:
        raise _unknown_column(outer, sorted({o.name for i in inputs for o in i.query.outputs}), ctx, str(err)) from None
    tracer = _Tracer(index, columns, keys, public)
    try:
        return tuple(tracer.trace(qualified, i) for i in range(len(qualified.selects)))
    except (KeyError, IndexError, AttributeError):
        return None  # an unusual shape: no intervals, every column treated as noisy


def _union_lineage(outer: exp.Query, index: dict[str, int], columns: dict[tuple[int, str], int],
                   keys: dict[tuple[int, int], bool]) -> tuple[OutputLineage, ...] | None:
    """The lineage of a UNION ALL of releases and nothing else (the outer query `_release` builds
    for each branch: SELECT __c0 AS name, ... FROM <release>), read off the tree: output p copies
    column p of every branch. Every column is one dpsql wrote, so nothing is left to resolve
    (qualify, the general path, costs about a millisecond). None for any other shape."""
    leaves: list[exp.Select] = []
    pending: list[exp.Expr] = [outer]
    while pending:
        node = pending.pop()
        if isinstance(node, exp.Union) and not node.args.get("distinct") and \
                not any(node.args.get(k) for k in ("with_", "order", "limit", "offset")):
            pending += [node.expression, node.this]
            continue
        if not isinstance(node, exp.Select) or set(k for k, v in node.args.items() if v) != {"expressions", "from_"}:
            return None
        source = node.args["from_"].this
        if not isinstance(source, exp.Table) or source.name not in index or source.args.get("alias") is not None:
            return None
        if not all(isinstance(a, exp.Alias) and isinstance(a.this, exp.Column) and not a.this.table and
                   (index[source.name], a.this.name) in columns for a in node.expressions):
            return None
        leaves.append(node)
    width = len(leaves[0].expressions)
    if any(len(leaf.expressions) != width for leaf in leaves):
        return None
    out = []
    for position in range(width):
        sources = []
        for leaf in leaves:
            i = index[leaf.args["from_"].this.name]
            sources.append((i, columns[(i, leaf.expressions[position].this.name)]))
        out.append(OutputLineage(passthrough=True, sources=tuple(dict.fromkeys(sources)), noisy=any(not keys[s] for s in sources)))
    return tuple(out)


def _unknown_column(outer: exp.Query, known: list[str], ctx: AnalysisContext, reason: str) -> Exception:
    for column in outer.find_all(exp.Column):
        if column.name and column.name.lower() not in {k.lower() for k in known} and column.name in reason:
            return UnknownColumnError(f"column '{column.name}' is not a column of the released results", code="DP111",
                                      span=span_of(column, ctx.sql), sql=ctx.sql,
                                      hint=f"released columns: {', '.join(known) or 'none'}")
    return UnknownColumnError("the outer query names a column the released results do not have", code="DP111",
                              sql=ctx.sql, hint=f"released columns: {', '.join(known) or 'none'}")


class _Tracer:
    def __init__(self, index: dict[str, int], columns: dict[tuple[int, str], int], keys: dict[tuple[int, int], bool],
                 public: frozenset[str] = frozenset()) -> None:
        self.index = index
        self.columns = columns  # (input, normalised name) -> the column's position in the release
        self.keys = keys
        self.public = public  # the public tables' names: their columns are exact (no noise, no interval)

    def trace(self, query: exp.Expr, position: int, depth: int = 0) -> OutputLineage:
        if depth > 64:
            raise KeyError("too deep")
        if isinstance(query, exp.Subquery):
            return self.trace(query.this, position, depth + 1)
        if isinstance(query, exp.SetOperation):
            parts = [self.trace(query.this, position, depth + 1), self.trace(query.expression, position, depth + 1)]
            return OutputLineage(passthrough=all(p.passthrough for p in parts),
                                 sources=tuple(dict.fromkeys(s for p in parts for s in p.sources)),
                                 noisy=any(p.noisy for p in parts))
        assert isinstance(query, exp.Select)
        item = query.selects[position]
        body = item.this if isinstance(item, exp.Alias) else item
        if isinstance(body, exp.Column):
            return self._column(query, body, depth)
        parts = [self._column(query, c, depth) for c in body.find_all(exp.Column)
                 if c.find_ancestor(exp.Subquery, exp.Select) is query]
        # An aggregate or window over released rows (COUNT(*) counts released keys) is noisy.
        nested = body.find(exp.Subquery, exp.AggFunc, exp.Window) is not None
        return OutputLineage(passthrough=False, sources=tuple(dict.fromkeys(s for p in parts for s in p.sources)),
                             noisy=nested or any(p.noisy for p in parts))

    def _column(self, query: exp.Select, column: exp.Column, depth: int) -> OutputLineage:
        source = self._source(query, column.table)
        if isinstance(source, exp.Table) and source.name in self.index:
            i = self.index[source.name]
            j = self.columns[(i, column.name)]
            return OutputLineage(passthrough=True, sources=((i, j),), noisy=not self.keys[(i, j)])
        if isinstance(source, exp.Table) and source.name in self.public:
            return OutputLineage(passthrough=False, sources=(), noisy=False)
        body = source.this if isinstance(source, (exp.Subquery, exp.CTE)) else None
        if body is None:
            raise KeyError(column.name)
        names = [s.alias_or_name.lower() for s in _projection_source(body).selects]
        return self.trace(body, names.index(column.name.lower()), depth + 1)

    def _source(self, query: exp.Select, alias: str) -> exp.Expr:
        for source in _sources(query):
            if source.alias_or_name == alias:
                if isinstance(source, exp.Table) and source.name not in self.index and source.name not in self.public:
                    cte = _find_cte(query, source.name)
                    if cte is not None:
                        return cte
                return source
        raise KeyError(alias)


def _projection_source(query: exp.Expr) -> exp.Select:
    while isinstance(query, (exp.SetOperation, exp.Subquery)):
        query = query.this
    assert isinstance(query, exp.Select)
    return query


def _find_cte(node: exp.Expr, name: str) -> exp.CTE | None:
    current: exp.Expr | None = node
    while current is not None:
        with_ = current.args.get("with_") if isinstance(current, exp.Query) else None
        if with_ is not None:
            for cte in with_.expressions:
                if isinstance(cte, exp.CTE) and cte.alias == name:
                    return cte
        current = current.parent
    return None


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    found = []
    parent = node.parent
    while parent is not None:
        found.append(parent)
        parent = parent.parent
    return found
