"""Helpers shared by the attack modules (tests/security/test_attack_a*.py).

Two neighbouring databases, the outcome of one query through `dpsql.connect` (answer or error
code, and how much was charged), and one-sided Clopper-Pearson bounds for the (epsilon, delta)
inequality checks. The exception and engine helpers of tests/integration/test_security.py are
re-exported, so every attack module reads the same definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from scipy import stats

import dpsql
from tests.integration.test_security import (
    SECRET,
    SECRET_ID,
    exception_texts,
    forbid_engine,
    with_secret_person,
)

__all__ = ["SECRET", "SECRET_ID", "Outcome", "cp_lower", "cp_upper", "dp_violations", "exception_texts",
           "forbid_engine", "outcome", "with_secret_person"]


@dataclass(frozen=True)
class Outcome:
    """What an analyst sees of one execution: the error code (or "answered"), the error text,
    the result's shape, and the number of ledger entries it added."""

    kind: str
    text: str
    shape: tuple[Any, ...]
    charges: int


def outcome(con: dpsql.Connection, sql: str, parameters: list[object] | None = None) -> Outcome:
    """Run `sql` once and describe what came back, values left out (they are noisy)."""
    before = len(con.ledger())
    try:
        cur = con.execute(sql, parameters)
        rows = cur.fetchall()
        shape: tuple[Any, ...] = (tuple(d[0] for d in cur.description or ()), len(rows),
                                  tuple(tuple(v is None for v in row) for row in rows))
        kind, text = "answered", ""
    except dpsql.Error as error:
        kind, text, shape = getattr(error, "code", type(error).__name__), str(error), ()
    return Outcome(kind, text, shape, len(con.ledger()) - before)


def cp_lower(hits: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower bound on a binomial p, holding with probability >= 1 - alpha."""
    return 0.0 if hits == 0 else float(stats.beta.ppf(alpha, hits, n - hits + 1))


def cp_upper(hits: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound on a binomial p, holding with probability >= 1 - alpha."""
    return 1.0 if hits == n else float(stats.beta.ppf(1 - alpha, hits + 1, n - hits))


def dp_violations(out_d: list[Any], out_d2: list[Any], events: dict[str, Callable[[Any], bool]],
                  epsilon: float, delta: float, alpha: float) -> list[tuple[str, str, int, int]]:
    """Events and directions where the samples certify P_x(S) > e^eps P_y(S) + delta: a lower
    bound on one side above e^eps times an upper bound on the other (each at level 1 - alpha)."""
    n = len(out_d)
    assert len(out_d2) == n
    found = []
    for name, event in events.items():
        a, b = sum(map(event, out_d)), sum(map(event, out_d2))
        for label, x, y in (("D>D'", a, b), ("D'>D", b, a)):
            if cp_lower(x, n, alpha) > math.exp(epsilon) * cp_upper(y, n, alpha) + delta:
                found.append((name, label, x, y))
    return found


def without_person(frame: pd.DataFrame, person: int = SECRET_ID) -> pd.DataFrame:
    """D' of a removal pair: every row of `person` dropped."""
    return frame[frame["person_id"] != person].reset_index(drop=True)


def all_codes(outcomes: Iterable[Outcome]) -> set[str]:
    return {o.kind for o in outcomes}
