"""Tests' driver of the robust requests' reads (backend/sql/robust_sql.reads), outside a session: the
executor's loop (execution/executor.py `_drive`) over a given `run(select, params) -> (names, rows)`,
so a test can read a request on any engine or relation it builds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlglot import exp

from dpsql.backend.sql.robust_sql import GroupKey, RobustQuery, Rows, reads
from dpsql.ir.plan import Plan

Run = Callable[[exp.Select, Mapping[str, Any]], Rows]


def fetch(query: RobustQuery, plan: Plan, run: Run, params: Mapping[str, Any] | None = None) -> dict[GroupKey, Any]:
    """Every statement of one request, each answered by `run`, and what the request read."""
    steps = reads(query, plan, params)
    select, bound = next(steps)
    while True:
        rows = run(select, bound)
        try:
            select, bound = steps.send(rows)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
