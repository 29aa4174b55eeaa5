"""MODE(col) (and MODE() WITHIN GROUP (ORDER BY col)): the most frequent value of a column, released
by report-noisy-max over declared values, else by the stable-histogram mode or A_samp.

Every parameter comes from the policy, the query and its budget share, never from data: a column
with declared `values` uses report-noisy-max over the per-value counts (pure epsilon, never ⊥),
unless OPTIONS (mode_blocks = B) asks for A_samp; otherwise the rule below picks the
stable-histogram mode or A_samp. A_samp's B is OPTIONS (mode_blocks = B), else
max(200, 8 (tau + 4 G/eps)): 200 is the default without an estimate of n, raised when tau is
so large that 200 votes could never pass. Each answer states its confidence that it is the mode.

Which mechanism without declared values (the rule; README, docs/mechanisms.md, EXPLAIN). Both mechanisms answer when the top value leads
clearly; they differ in how many rows that takes. On a reference column (the top value holds 30%
of the rows, the runner-up 10%, every other value is rare), each needs at least:

- the stable-histogram mode: n_hist = T / 0.3 rows, T its row threshold (it passes with
  probability >= 1/2 once the top value has T rows). T ~ k + (2k / eps) ln(k / delta): it grows
  with k, the rows one person keeps, and does not depend on n;
- A_samp: n_asamp = B m rows, m the smallest subsample size whose expected vote lead
  B (P(top wins a subsample) - P(runner-up wins one)) reaches 2T tau + 1, the lead its test passes
  with probability >= 1/2 (subsamples of persons: k does not enter).

The planner takes the mechanism with the smaller n (ties: the histogram). It reads epsilon,
delta, k, the groups one person touches (A_samp's test) and B: never the data. When a public
row count n is known (`rows`), a mechanism whose n_* exceeds it cannot answer the reference
column there and the other is taken if it can; without one (the usual case) the smaller n_* wins.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from sqlglot import exp

from dpsql.aggregates.base import Binder, Needs, Planning, RobustEstimate, Share, within_group_argument
from dpsql.aggregates.quantiles import NULL_NOTE
from dpsql.catalog.policy import ENGINE_TYPES, Column
from dpsql.ir.plan import Bounding, Cell, ModeRequest, Plan, RobustRelease
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms import ptr, registry
from dpsql.mechanisms.base import fmt
from dpsql.mechanisms.confidence import Confident
from dpsql.mechanisms.histogram_mode import HistogramModeSpec
from dpsql.mechanisms.noisy_max import NoisyMaxModeSpec
from dpsql.mechanisms.ptr import PTRTest
from dpsql.mechanisms.subsample import ASampSpec, default_blocks

MODE = "mode"

TOP_SHARE = 0.3
RUNNER_UP_SHARE = 0.1
MAX_BLOCK_ROWS = 1 << 14  # beyond this a subsample's mode is the top value's almost surely


@dataclass(frozen=True, slots=True)
class ModeChoice:
    """The chosen mechanism and the reference row counts it was chosen by (public)."""

    mechanism: str  # "stable-histogram" or "asamp"
    histogram_rows: int
    asamp_rows: int | None  # None: A_samp cannot reach its lead on the reference column

    @property
    def note(self) -> str:
        asamp = "never" if self.asamp_rows is None else f"~{self.asamp_rows:,} rows"
        chosen = "the stable-histogram mode" if self.mechanism == "stable-histogram" else "A_samp"
        return (f"MODE without declared values: {chosen}, chosen from public facts (epsilon, delta, rows per person, "
                f"subsamples): on a column whose top value holds 30% of the rows and the runner-up 10%, the histogram "
                f"answers from ~{self.histogram_rows:,} rows, A_samp from {asamp}; the fewer rows wins")


def _block_win(m: int) -> float:
    """P(top is a subsample's mode) - P(runner-up is), a subsample of m rows from the reference column.

    Rows are top (0.3), runner-up (0.1) or a rare value (each at most once, so it never beats a
    count of 2): a value wins with count >= 2 above the other's count; equal counts >= 2 split.
    """
    p, q = TOP_SHARE, RUNNER_UP_SHARE
    log_p, log_q, log_r = math.log(p), math.log(q), math.log(1 - p - q)
    lead = 0.0
    for a in range(m + 1):
        for b in range(m - a + 1):
            if a == b or max(a, b) < 2:
                continue
            log_prob = (math.lgamma(m + 1) - math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(m - a - b + 1)
                        + a * log_p + b * log_q + (m - a - b) * log_r)
            lead += math.exp(log_prob) if a > b else -math.exp(log_prob)
    return lead


@functools.lru_cache(maxsize=256)
def asamp_rows(blocks: int, needed_lead: int) -> int | None:
    """B m for the smallest m with B * _block_win(m) >= needed_lead (None: no m up to the cap)."""
    if needed_lead > blocks:
        return None
    m = 1
    while m <= MAX_BLOCK_ROWS and blocks * _block_win(m) < needed_lead:
        if m >= 64:  # past small sizes the win rate is near 1: the lead needs only blocks >= it
            return blocks * m if blocks * 0.999 >= needed_lead else None
        m += 1
    return blocks * m if m <= MAX_BLOCK_ROWS else None


def choose(histogram: HistogramModeSpec, asamp: ASampSpec, rows: int | None = None) -> ModeChoice:
    """The MODE mechanism for a column without declared values (the rule in the module docstring)."""
    n_hist = math.ceil(histogram.threshold / Fraction(TOP_SHARE).limit_denominator())
    n_asamp = asamp_rows(asamp.blocks, asamp.normaliser * asamp.test.threshold + 1)
    pick = "stable-histogram" if n_asamp is None or n_hist <= n_asamp else "asamp"
    if rows is not None and n_asamp is not None:
        if pick == "stable-histogram" and n_hist > rows >= n_asamp:
            pick = "asamp"
        elif pick == "asamp" and n_asamp > rows >= n_hist:
            pick = "stable-histogram"
    return ModeChoice(pick, n_hist, n_asamp)


def _noisy_max(call: AggregateCall, query: BoundQuery) -> bool:
    """MODE of a column with declared values: report-noisy-max over the per-value counts (pure
    epsilon, never ⊥), unless OPTIONS (mode_blocks = B) asks for A_samp. A_samp needs each of its
    B subsamples to agree, which few persons per subsample rarely do (1,744 subsamples of about 3
    persons at 10k rows, epsilon 0.1: refused 20/20), while the noisy counts' error is k/eps rows."""
    return bool(call.column is not None and call.column.values) and query.mode_blocks is None


@dataclass(frozen=True, slots=True)
class ModeEstimate(RobustEstimate):
    """MODE: a value of the column (None for ⊥) and the confidence that it is the mode."""

    robust: int
    column: Column
    kind = "mode"

    def output_type(self, plan: Plan) -> str:
        return ENGINE_TYPES[self.column.type]

    def decode(self, released: Any) -> Cell:
        if isinstance(released, Confident):
            return Cell(None if released.value is ptr.REFUSED else released.value, None, released.confidence)
        return Cell(None)  # ⊥

    def expected(self, plan: Plan) -> str:
        assert self.robust is not None
        spec = plan.robust[self.robust].spec
        chosen = registry.name(spec)
        if chosen == "noisy-max":
            half = cast(NoisyMaxModeSpec, spec).count_half_width()
            return (f"the mode whenever it leads the runner-up by more than {fmt(2 * half)} rows "
                    "(95%); each answer states its confidence that it is the mode")
        if chosen == "stable-histogram":
            threshold = dict(registry.error(spec).details)["threshold"]
            return (f"NULL (⊥) unless some value has about {threshold} rows; each answer states its confidence "
                    "that it is the mode")
        return ("depends on the data (a stability test releases the subsample vote's winner or NULL, ⊥); each answer states "
                "its confidence that no single person changes the winner")


class Mode:
    """MODE (module docstring)."""

    kinds = (MODE,)
    classes: tuple[type[exp.Expr], ...] = (exp.Mode,)
    names: tuple[str, ...] = ()
    filterable = False

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:
        arg = within_group_argument(node, binder) if isinstance(node, exp.WithinGroup) else node.this
        return AggregateCall(kind=MODE, column=binder.column(arg, node), text=text)

    def accuracy_first(self, call: AggregateCall) -> str | None:
        return "its error depends on the values"

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        return False, None

    def value_type(self, call: AggregateCall) -> str:
        return ENGINE_TYPES[call.column.type] if call.column is not None else "VARCHAR"

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        delta = not _noisy_max(call, query)
        return Needs(share=True, delta=delta, notes=(NULL_NOTE,) if delta else ())

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> ModeEstimate:
        column, query, k = call.column, planning.query, planning.bounding.max_rows
        assert column is not None
        if _noisy_max(call, query):
            most = NoisyMaxModeSpec(share.epsilon, k, tuple(column.values or ()))
            request = planning.mode_request(ModeRequest(column, 1, counts=True))
            return ModeEstimate(planning.robust(RobustRelease(index, most, request)), column)
        test = PTRTest(share.epsilon, share.delta, planning.groups)
        spec = ASampSpec(test, blocks=query.mode_blocks or default_blocks(test))
        if query.mode_blocks is None:  # no declared values: A_samp or the histogram (public facts only)
            histogram = HistogramModeSpec(share.epsilon, share.delta, k)
            choice = choose(histogram, spec)
            planning.note(choice.note)
            if choice.mechanism == "stable-histogram":
                request = planning.mode_request(ModeRequest(column, 1, counts=True))
                return ModeEstimate(planning.robust(RobustRelease(index, histogram, request)), column)
        request = planning.mode_request(ModeRequest(column, spec.blocks))
        return ModeEstimate(planning.robust(RobustRelease(index, spec, request)), column)


MODES = Mode()
