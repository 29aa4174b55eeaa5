"""Column probes (RowProbe) answered with columns and types only, and the policy's views as tables.

Both read the policy and the SQL, never data (backend/engines/row_types.py types a statement over empty
tables of the policy's types), and charge nothing.
"""

from __future__ import annotations

from types import MappingProxyType

from sqlglot import exp

from dpsql.analysis.analyze import analyze
from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.row_level import PROBE_NOTICE
from dpsql.analysis.views import check_views, view_bodies
from dpsql.backend.engines.row_types import describe_rows
from dpsql.catalog.policy import Column, Policy, Table
from dpsql.frontend.parse import parse_statement
from dpsql.ir.query import RowProbe
from dpsql.result import NoisyResult, ResultColumn

_POLICY_TYPES = {"BIGINT": "int", "INTEGER": "int", "SMALLINT": "int", "TINYINT": "int", "HUGEINT": "int", "DOUBLE": "float",
                 "FLOAT": "float", "VARCHAR": "text", "BOOLEAN": "bool", "DATE": "date", "TIMESTAMP": "timestamp"}  # fmt: skip


def probe_columns(policy: Policy, probe: RowProbe) -> tuple[ResultColumn, ...]:
    """The columns and types the probe's statement would return."""
    return tuple(ResultColumn(name, type_) for name, type_ in describe_rows(policy.tables, view_bodies(policy), probe.tree))


def answer_probe(policy: Policy, probe: RowProbe) -> NoisyResult:
    """A probe's answer: its columns, no rows, and a message that says why there are none."""
    columns = probe_columns(policy, probe)
    return NoisyResult("probe", columns, [], tuple(None for _ in columns), [], message=PROBE_NOTICE)


def probe_explain(probe: RowProbe) -> list[str]:
    """EXPLAIN of a column probe."""
    return [f"Query: {' '.join(probe.sql.split())}",
            f"Column probe: a row-level statement with LIMIT {probe.limit}, answered with its columns and types only "
            "(computed from the SQL and the policy over empty tables: no rows, no data read)",
            "Cost: epsilon 0, delta 0"]


_CHECKED: dict[int, Policy] = {}


def check_policy_views(policy: Policy) -> None:
    """Check the policy's views once (CatalogError DP001 naming a view that is not one row-level
    SELECT over the policy's tables): every session, the server and `dpsql policy check` do."""
    if not policy.views or _CHECKED.get(id(policy)) is policy:
        return
    context = AnalysisContext(policy, policy.budget.default_query)
    check_views(policy, lambda sql: analyze(parse_statement(sql), context))
    if len(_CHECKED) > 64:
        _CHECKED.clear()
    _CHECKED[id(policy)] = policy


def view_tables(policy: Policy) -> dict[str, Table]:
    """Each view of the policy as the catalog lists it: a private table whose columns are the
    view's outputs, typed over empty tables; a column that is a base column under its own or
    another name keeps that column's bounds and public domain (its comment)."""
    check_policy_views(policy)
    tables: dict[str, Table] = {}
    bodies = view_bodies(policy)
    for name, body in bodies.items():
        described = describe_rows(policy.tables, bodies, exp.select("*").from_(exp.to_identifier(name)))
        base = _base_table(policy, body)
        plain = _plain_columns(body, base)
        columns = {}
        for column, engine_type in described:
            source = plain.get(column.lower())
            if source is not None:
                columns[column.lower()] = Column(column.lower(), source.type, source.lower, source.upper, source.values, source.precision)
            else:
                columns[column.lower()] = Column(column.lower(), _POLICY_TYPES.get(engine_type.upper(), "text"))  # type: ignore[arg-type]
        unit = base.privacy_unit if base is not None and base.privacy_unit in plain else None
        tables[name] = Table(name=name, columns=MappingProxyType(columns), privacy_unit=unit,
                             max_rows=base.max_rows if base is not None else 1, max_groups=base.max_groups if base is not None else 1)
    return tables


def _base_table(policy: Policy, body: exp.Select) -> Table | None:
    """The one table a view reads (None when it joins several)."""
    names = {t.name.lower() for t in body.find_all(exp.Table)}
    return policy.table(names.pop()) if len(names) == 1 else None


def _plain_columns(body: exp.Select, base: Table | None) -> dict[str, Column]:
    """Output name -> the base column it is, for outputs that are a base column (renamed or not)."""
    if base is None:
        return {}
    found: dict[str, Column] = {}
    for item in body.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            found.update(base.columns)
            continue
        inner = item.this if isinstance(item, exp.Alias) else item
        column = base.column(inner.name) if isinstance(inner, exp.Column) else None
        if column is not None:
            found[item.alias_or_name.lower()] = column
    return found


