"""The types of a statement's parameters, inferred from the policy before any value is known.

A pgwire client may prepare `... WHERE age > $1` and ask for the parameter types before it
binds values (asyncpg does). A parameter takes the policy type of the column it is compared
with, `int` in LIMIT/OFFSET, `float` in privacy options, and is unknown (None) otherwise.
Pure: policy metadata only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlglot import exp

from dpsql.catalog.policy import Policy
from dpsql.frontend.parse import parse_tree
from dpsql.frontend.privacy_dialect import PrivacyOptions

_BINARY = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Like, exp.ILike,
           exp.NullSafeEQ, exp.NullSafeNEQ)  # fmt: skip
_STAND_INS: dict[str | None, object] = {"int": 1, "float": 1.0, "text": "", "bool": True, "date": dt.date(2000, 1, 1),
                                      "timestamp": dt.datetime(2000, 1, 1), None: ""}


def _column_type(node: exp.Expr, columns: dict[str, str]) -> str | None:
    return columns.get(node.name.lower()) if isinstance(node, exp.Column) else None


def _placeholder_type(node: exp.Placeholder, columns: dict[str, str]) -> str | None:
    parent = node.parent
    if node.find_ancestor(PrivacyOptions) is not None:
        return "float"
    if isinstance(parent, exp.Paren):
        return _placeholder_type(parent, columns)  # type: ignore[arg-type]
    if isinstance(parent, _BINARY):
        other = parent.expression if parent.this is node else parent.this
        return _column_type(other, columns)
    if isinstance(parent, (exp.In, exp.Between)):
        return _column_type(parent.this, columns)
    if isinstance(parent, (exp.Limit, exp.Offset)):
        return "int"
    return None


def parameter_types(sql: str, policy: Policy) -> tuple[str | None, ...]:
    """Policy type names ("int", "float", "text", "bool", "date"; None if unknown) of the
    statement's parameters: `$n` by number, `?` by position. Empty when the SQL does not parse.
    """
    tree = parse_tree(sql)
    if tree is None:
        return ()
    columns: dict[str, str] = {}
    for table_node in tree.find_all(exp.Table):
        table = policy.table(table_node.name)
        if table is not None:
            columns.update({name: column.type for name, column in table.columns.items()})
    found = list(tree.find_all(exp.Placeholder, bfs=False))
    if all(p.this for p in found) and found:
        types: dict[int, str | None] = {}
        for placeholder in found:
            number = int(str(placeholder.this)) if str(placeholder.this).isdigit() else 0
            types[number] = types.get(number) or _placeholder_type(placeholder, columns)
        return tuple(types.get(n) for n in range(1, max(types) + 1))
    qmarks = sorted((p for p in found if not p.this), key=lambda p: p.meta.get("start", 0))  # text order, as bound
    return tuple(_placeholder_type(p, columns) for p in qmarks)


def stand_ins(types: Sequence[str | None]) -> list[object]:
    """Neutral values of the given types, to plan a statement whose parameters are not bound yet."""
    return [_STAND_INS.get(t, "") for t in types]
