"""MODE of a column without declared values: A_samp or the stable-histogram mode, from public facts.

The rule (README, docs/mechanisms.md, EXPLAIN). Both mechanisms answer when the top value leads
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

from dpsql.mechanisms.histogram_mode import HistogramModeSpec
from dpsql.mechanisms.subsample import ASampSpec

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
