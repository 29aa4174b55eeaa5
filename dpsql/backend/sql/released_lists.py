"""Released values handed to DuckDB as list parameters, one per column, unnested in step.

No DataFrame and no Arrow table: post-processing imports neither pandas nor pyarrow (DuckDB's
Python client imports pandas as soon as a frame is registered). DuckDB types each list from its
values; a column mixing Python types it cannot unify (a date and a number) goes as text, and the
CAST to the released type that every caller applies turns it back, as the Arrow path did.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from typing import Any

from sqlglot import exp

_NUMBERS = frozenset({int, float, decimal.Decimal})
_INT128 = 2**127


def unnest_select(names: Sequence[str], parameters: Sequence[str], types: Sequence[exp.DataType]) -> exp.Select:
    """SELECT CAST(UNNEST($p1) AS t1) AS "name1", ...: one row per list position, each column of
    its released type (`types`: fresh nodes, attached as they are)."""
    return exp.Select(expressions=[exp.Alias(this=exp.Cast(this=exp.Unnest(expressions=[exp.Placeholder(this=p)]), to=t),
                                             alias=exp.to_identifier(n, quoted=True))
                                   for p, n, t in zip(parameters, names, types)])


def list_values(values: list[Any]) -> list[Any]:
    """The values as DuckDB converts one list: unchanged, or as text when their types do not unify."""
    kinds = {type(v) for v in values if v is not None}
    mixed = len(kinds) > 1 and not kinds <= _NUMBERS
    too_wide = int in kinds and any(type(v) is int and not -_INT128 <= v < _INT128 for v in values)
    if mixed or too_wide:
        return [None if v is None else str(v) for v in values]
    return values
