"""Views of the policy (`[views.<name>] sql = "SELECT ..."`): row-level SELECTs over the policy's
tables that a data owner publishes under a name, so BI tools list them as tables.

A query reads a view as it reads a row-level subquery or CTE: `flatten` (analysis/inline.py)
inlines the view's body, so the query runs over the base table with its bounding, sensitivities
and cost unchanged. A view's text is the data owner's, checked once (`check_views`): one SELECT,
row-level (projections, derived columns, WHERE, joins of policy tables), reading tables of the
policy only (not other views), no parameters.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlglot import exp

from dpsql.catalog.policy import Policy, View
from dpsql.errors import CatalogError, Error
from dpsql.frontend.clock import has_clock
from dpsql.frontend.parse import parse_tree

_CACHE: dict[int, tuple[Policy, dict[str, exp.Select]]] = {}
_CACHE_MAX = 64
_LOCK = threading.Lock()
_SCHEMAS = frozenset({"main", "public"})
_CATALOGS = frozenset({"memory", "dpsql"})


def _invalid(policy: Policy, view: View, problem: str, hint: str | None = None) -> CatalogError:
    where = f"policy {policy.path}" if policy.path else "policy"
    return CatalogError(f"{where}: key 'views.{view.name}.sql': {problem}", code="DP001", hint=hint)


def view_bodies(policy: Policy) -> dict[str, exp.Select]:
    """Each view's SELECT, parsed once per policy (positions removed: carets point into the
    analyst's statement, never into a view's text). Raises CatalogError (DP001) for a view that
    is not one SELECT."""
    if not policy.views:
        return {}
    with _LOCK:
        cached = _CACHE.get(id(policy))
        if cached is not None and cached[0] is policy:
            return cached[1]
    bodies = {}
    for name, view in policy.views.items():
        tree = parse_tree(view.sql)
        if not isinstance(tree, exp.Select):
            raise _invalid(policy, view, "must be one SELECT statement (no UNION, no other statement)")
        if tree.find(exp.Placeholder, exp.Parameter) is not None:
            raise _invalid(policy, view, "must not hold parameters (?)")
        if has_clock(tree):
            raise _invalid(policy, view, "must not read the clock (now(), current_date, ...): its rows would change with "
                           "the time it is read", "write the date as a literal; analysts may write now() in their queries")
        for node in tree.walk():
            node.meta.clear()
        bodies[name] = tree
    with _LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[id(policy)] = (policy, bodies)
    return bodies


def _default_schema(table: exp.Table) -> bool:
    db, catalog = table.args.get("db"), table.args.get("catalog")
    return (db is None or db.name.lower() in _SCHEMAS) and (catalog is None or catalog.name.lower() in _CATALOGS)


def referenced_views(select: exp.Select, policy: Policy) -> tuple[exp.Select, dict[str, exp.Select]]:
    """The statement with its references to views unqualified (`public.v` -> `v`, in a copy), and
    the bodies of the views it reads, to inline like CTEs defined outside the statement (a CTE of
    the statement with the same name takes precedence)."""
    if not policy.views:
        return select, {}
    ctes = {cte.alias_or_name.lower() for cte in select.find_all(exp.CTE)}

    def is_view(table: exp.Table) -> bool:
        name = table.name.lower()
        return (isinstance(table.this, exp.Identifier) and policy.view(name) is not None and _default_schema(table)
                and not (name in ctes and not table.args.get("db")))

    if not any(is_view(t) for t in select.find_all(exp.Table)):
        return select, {}
    bodies = view_bodies(policy)
    copy = select.copy()
    found = {}
    for table in copy.find_all(exp.Table):
        if is_view(table):
            table.set("db", None)
            table.set("catalog", None)
            found[table.name.lower()] = bodies[table.name.lower()]
    return copy, found


def check_views(policy: Policy, analyze: Any) -> None:
    """Check every view of the policy: one row-level SELECT over policy tables. `analyze(sql)`
    analyses a statement against the policy (raising a dpsql error on refusal); each view is
    checked as `SELECT COUNT(*) FROM <view>`, which inlines it exactly as queries will.

    Raises:
        CatalogError: DP001, naming the view and why.
    """
    bodies = view_bodies(policy)
    for name, body in bodies.items():
        view = policy.views[name]
        for table in body.find_all(exp.Table):
            if isinstance(table.this, exp.Identifier) and policy.view(table.name) is not None and _default_schema(table):
                raise _invalid(policy, view, f"reads the view {table.name.lower()!r}: a view reads tables of the policy only",
                               "write the other view's SELECT over its tables")
        if not any(isinstance(t.this, exp.Identifier) and policy.table(t.name) is not None and not policy.table(t.name).public  # type: ignore[union-attr]
                   for t in body.find_all(exp.Table)):
            raise _invalid(policy, view, "reads no private table of the policy", "a view publishes a row-level selection of a private table")
        failure: Error | None = None
        try:
            analyze(f"SELECT COUNT(*) FROM {name}")
        except Error as error:
            failure = error
        if failure is not None:
            raise _invalid(policy, view, f"is not a row-level SELECT over the policy's tables ({failure.code}: {failure.message})",
                           failure.hint)
