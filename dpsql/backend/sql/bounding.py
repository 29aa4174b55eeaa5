"""The statements that build a private table's bounded relation, in order (run by Engine.ensure_bounded,
printed by EXPLAIN).

One plan for every engine (plan_sql.bounded_select: every row of a person with at most max_rows rows,
the first max_rows rows by the keyed hash of a heavier person; rows without a person dropped): count
rows per person over the source (the heavy persons: a read of the unit column only), then one
CREATE TABLE AS copies the light persons' rows (an anti-join against the heavy persons) and appends
the heavy persons' ranked rows.

The relation is written once, by that one statement, and never modified afterwards. DuckDB keeps
deletion markers in a table whose rows were deleted, and every later scan pays for them: an earlier
plan on DuckDB copied every row, then deleted the heavy persons' rows and inserted their ranked ones
back; on 5M rows where 15% of the persons have more than max_rows rows, a warm COUNT(*) then took
20.5 ms against 0.5 ms on the loaded table, and COUNT(*) WHERE age > 40 47 ms against 6.6 ms
(bench/overhead.py). Written once, the relation scans like a freshly loaded table (0.4 and 5.8 ms),
and the build is no slower: the count per person reads one column of the source, where the copy
read them all.

A failed step leaves nothing the session uses: the relation is registered only after the last
step, and every step replaces what an earlier failed attempt left behind.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot.expressions as exp

from dpsql.backend.sql.plan_sql import bounded_select, row_heavy_select
from dpsql.catalog.policy import Table


@dataclass(frozen=True, slots=True)
class Step:
    """One statement: `table` names the temporary table it creates (its SELECT is `sql`), else
    `sql` is run as it is. `seeded`: it reads the secret seed ($seed)."""

    sql: exp.Expr
    table: str | None = None
    seeded: bool = False


def bounding_steps(table: Table, source: str, bounded: str, heavy: str) -> tuple[Step, ...]:
    """The statements building `bounded` from the typed source view `source` (`heavy`: the persons
    above max_rows, a small relation of its own)."""
    return (Step(row_heavy_select(table, source), heavy),
            Step(bounded_select(table, source, heavy), bounded, seeded=True))
